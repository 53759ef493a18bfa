import { Context, Data, type Effect, type Stream } from "effect"
import type { FileId } from "../../schema/Files.js"

/** What storing a file's content found out, while it streamed through. */
export interface StoredContent {
  readonly size: number
  /** Lowercase hex. */
  readonly sha256: string
}

/** The body went past the limit: storing stopped there (what was written is the caller's to discard). */
export class ContentTooLarge extends Data.TaggedError("ContentTooLarge")<{ readonly limit: number }> {}

/** The content went away while it was read: its file was deleted or replaced meanwhile. */
export class ContentGone extends Data.TaggedError("ContentGone")<{ readonly fileId: FileId }> {}

/**
 * Where file content lives, apart from its metadata (FileRepo): PostgreSQL today (PgFileStore.ts), an
 * object store some day. Content goes in and comes out as streams: no file is ever whole in memory.
 * Storage failures are defects; content deleted under a reader is not one (ContentGone).
 */
export class FileStore extends Context.Tag("files/FileStore")<FileStore, {
  /** Writes `body` as the content of `fileId`, hashing it on the way; fails past `maxBytes`. */
  readonly put: <E, R>(
    fileId: FileId,
    body: Stream.Stream<Uint8Array, E, R>,
    maxBytes: number
  ) => Effect.Effect<StoredContent, E | ContentTooLarge, R>
  /** Bytes `start` to `end` (inclusive) of a stored content; fails where the content is no longer there. */
  readonly read: (fileId: FileId, start: number, end: number) => Stream.Stream<Uint8Array, ContentGone>
  /** Removes the content; removing content that is not there does nothing. */
  readonly delete: (fileId: FileId) => Effect.Effect<void>
}>() {}
