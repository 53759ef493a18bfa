import { SqlClient } from "@effect/sql"
import { Chunk, Effect, Layer, Option, Stream } from "effect"
import * as Crypto from "node:crypto"
import type { FileId } from "../../schema/Files.js"
import { PgPool } from "../db/PgPool.js"
import { ContentGone, ContentTooLarge, FileStore, type StoredContent } from "./FileStore.js"

const INSERT_CHUNK = "INSERT INTO file_chunks (file_id, start, data) VALUES ($1, $2, $3)"

/** Bytes per chunk row: large enough that a row's overhead is noise, small enough to hold a few in memory. */
export const CHUNK_BYTES = 1024 * 1024

/**
 * File content in PostgreSQL, in `file_chunks` rows of CHUNK_BYTES (migration 0018), written and read on
 * the node's pool directly (named statements, no statement compiler): a chunk goes in as a binary
 * parameter (comes out as hex text: pg reads binary results only per connection). While one chunk is written the next is read from the client; while one is sent to the
 * client the next is read from the database. At most about three chunks per transfer are in memory.
 */
export const PgFileStoreLive = Layer.effect(
  FileStore,
  Effect.gen(function*() {
    const pool = yield* PgPool
    const sql = yield* SqlClient.SqlClient
    const sliceText =
      "SELECT substring(data FROM ($2::bigint - start + 1)::int FOR $3::int) AS data FROM file_chunks " +
      "WHERE file_id = $1 AND start <= $2::bigint ORDER BY start DESC LIMIT 1"
    /** Up to `length` bytes from `position`, within the one chunk that holds it (empty: no such chunk). */
    const slice = (fileId: FileId, position: number, length: number) =>
      Effect.async<Buffer>((resume) => {
        pool.query<{ data: Buffer }>({ name: "file_chunks_slice", text: sliceText, values: [fileId, position, length] })
          .then(
            (result) => resume(Effect.succeed(result.rows[0]?.data ?? Buffer.alloc(0))),
            (cause) => resume(Effect.die(cause))
          )
      })

    const put = <E, R>(
      fileId: FileId,
      body: Stream.Stream<Uint8Array, E, R>,
      maxBytes: number
    ): Effect.Effect<StoredContent, E | ContentTooLarge, R> =>
      Effect.suspend(() => {
        const hash = Crypto.createHash("sha256")
        let size = 0
        let written = 0
        let pending: Array<Uint8Array> = []
        let pendingBytes = 0
        // the chunk being written, while the next is read from the client
        let inflight: Promise<unknown> | undefined
        const landed = Effect.suspend(() => inflight === undefined ? Effect.void : Effect.promise(() => inflight!))
        const write = (chunk: Buffer) =>
          Effect.zipRight(
            landed,
            Effect.sync(() => {
              const start = written
              written += chunk.length
              inflight = pool.query({ name: "file_chunks_insert", text: INSERT_CHUNK, values: [fileId, start, chunk] })
              // awaited later (or on failure by `ensuring` below): never an unhandled rejection
              inflight.catch(() => undefined)
            })
          )
        const flush = (all: boolean): Effect.Effect<void> =>
          Effect.suspend(() => {
            if (pendingBytes < CHUNK_BYTES && !(all && pendingBytes > 0)) return Effect.void
            const joined = Buffer.concat(pending, pendingBytes)
            const take = Math.min(CHUNK_BYTES, joined.length)
            const rest = joined.subarray(take)
            pending = rest.length === 0 ? [] : [rest]
            pendingBytes = rest.length
            return Effect.zipRight(write(joined.subarray(0, take)), flush(all))
          })
        return Stream.runForEach(body, (bytes) => {
          size += bytes.length
          if (size > maxBytes) return Effect.fail(new ContentTooLarge({ limit: maxBytes }))
          hash.update(bytes)
          pending.push(bytes)
          pendingBytes += bytes.length
          return pendingBytes >= CHUNK_BYTES ? flush(false) : Effect.void
        }).pipe(
          Effect.zipRight(flush(true)),
          Effect.zipRight(landed),
          Effect.zipRight(Effect.sync(() => ({ size, sha256: hash.digest("hex") }))),
          // a failed upload is discarded by the caller: its last write must have landed (or failed) first
          Effect.ensuring(Effect.promise(() => inflight?.catch(() => undefined) ?? Promise.resolve()))
        )
      }).pipe(Effect.withSpan("FileStore.put", { captureStackTrace: false }))

    const read = (fileId: FileId, start: number, end: number): Stream.Stream<Uint8Array, ContentGone> =>
      Stream.unfoldChunkEffect(start, (position) =>
        position > end
          ? Effect.succeed(Option.none())
          : Effect.flatMap(slice(fileId, position, Math.min(end - position + 1, CHUNK_BYTES)), (bytes) =>
            // the file was deleted (or replaced) since the reader found it
            bytes.length === 0
              ? Effect.fail(new ContentGone({ fileId }))
              : Effect.succeed(Option.some([Chunk.of<Uint8Array>(bytes), position + bytes.length] as const)))).pipe(
          // the next chunk is read while this one is sent
          Stream.buffer({ capacity: 1 })
        )

    const remove = (fileId: FileId) =>
      sql`DELETE FROM file_chunks WHERE file_id = ${fileId}`.pipe(Effect.asVoid, Effect.orDie)

    return FileStore.of({ put, read, delete: remove })
  })
)
