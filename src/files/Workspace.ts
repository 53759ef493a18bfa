import { Chunk, Effect, Stream } from "effect"
import { BadRequest, NotFound } from "../../schema/Errors.js"
import type { FileId, FileText } from "../../schema/Files.js"
import type { AgentId, OrganizationId, TaskId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import type { FileRow } from "./FileRepo.js"
import { Files, toFile, type Writer } from "./Files.js"

/** Most bytes one text read returns; a longer file is read on from `offset + bytes_read`. */
export const MAX_TEXT_READ = 256 * 1024
export const DEFAULT_TEXT_READ = 64 * 1024

const TEXT_TYPES: Record<string, string> = {
  md: "text/markdown; charset=utf-8",
  csv: "text/csv; charset=utf-8",
  json: "application/json",
  html: "text/html; charset=utf-8",
  yaml: "application/yaml",
  yml: "application/yaml"
}

/** A text file's media type, from its name's extension. */
export const textTypeOf = (name: string) =>
  TEXT_TYPES[name.slice(name.lastIndexOf(".") + 1).toLowerCase()] ?? "text/plain; charset=utf-8"

const notText = (name: string) =>
  BadRequest.of(
    `The file '${name}' holds binary content, not text: download it (GET /v1/files/{file_id}/content).`,
    undefined,
    "file_not_text"
  )

/** Where the last whole UTF-8 character of `bytes` ends: a sequence cut by the window's end is left out. */
const wholeCharacters = (bytes: Uint8Array) => {
  for (let back = 1; back <= Math.min(4, bytes.length); back++) {
    const byte = bytes[bytes.length - back]!
    if ((byte & 0xc0) === 0x80) continue
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1
    return length > back ? bytes.length - back : bytes.length
  }
  return bytes.length
}

/** A file addressed by id, or by name in a scope. */
export type FileRef =
  | { readonly file_id: FileId }
  | { readonly name: string; readonly agent_id?: AgentId | undefined }

/** The agent run a workspace belongs to. */
export interface AgentRun {
  readonly organizationId: OrganizationId
  readonly agentId: AgentId
  readonly taskId: TaskId
}

/**
 * Workspace files as text, for MCP clients and agents' runs: a window of a file decoded as UTF-8 (binary
 * files are refused, `file_not_text`), and a text written as a file. An agent's run reads its own
 * workspace and the organization's files, and writes in its own workspace (replacing a file of the same
 * name); its writes are audited as the agent's, with the task.
 */
export class Workspace extends Effect.Service<Workspace>()("files/Workspace", {
  effect: Effect.gen(function*() {
    const files = yield* Files

    const window = (row: FileRow, offset: number, maxBytes: number) =>
      Effect.gen(function*() {
        const size = Number(row.size)
        const start = Math.min(offset, size)
        const end = Math.min(size, start + Math.min(maxBytes, MAX_TEXT_READ))
        const chunks = yield* Stream.runCollect(files.content(row, start, end - 1))
        const bytes = Buffer.concat(Chunk.toArray(chunks))
        // a window that starts inside a character starts at the next one
        let head = 0
        while (start > 0 && head < Math.min(3, bytes.length) && (bytes[head]! & 0xc0) === 0x80) head++
        const tail = end < size ? wholeCharacters(bytes) : bytes.length
        const slice = bytes.subarray(head, Math.max(head, tail))
        if (slice.includes(0)) return yield* notText(row.name)
        const text = yield* Effect.try(() => new TextDecoder("utf-8", { fatal: true }).decode(slice)).pipe(
          Effect.mapError(() => notText(row.name))
        )
        return {
          file: toFile(row),
          text,
          offset: start + head,
          bytes_read: slice.length,
          truncated: start + head + slice.length < size
        } satisfies FileText
      })

    const resolve = (principal: Principal, ref: FileRef) =>
      "file_id" in ref
        ? files.find(principal, ref.file_id)
        : Effect.gen(function*() {
          const row = yield* files.findByName(principal.organizationId, ref.agent_id ?? null, ref.name)
          if (row === undefined || !files.readable(principal, row)) return yield* NotFound.of("File", ref.name)
          return row
        })

    const readText = (principal: Principal, ref: FileRef, offset = 0, maxBytes = DEFAULT_TEXT_READ) =>
      Effect.flatMap(resolve(principal, ref), (row) => window(row, offset, maxBytes))

    const textBody = (text: string) => Stream.succeed(new Uint8Array(Buffer.from(text, "utf8")))

    const writeText = (
      principal: Principal,
      input: {
        readonly name: string
        readonly agent_id?: AgentId | undefined
        readonly text: string
        readonly overwrite?: boolean | undefined
      }
    ) =>
      Effect.flatMap(files.writerFor(principal, input.agent_id, Policy.writeFiles), (writer) =>
        files.store(
          writer,
          { name: input.name, contentType: textTypeOf(input.name), overwrite: input.overwrite === true },
          textBody(input.text)
        ))

    /** An agent run's view: its workspace first, then the organization's files. */
    const forAgent = (run: AgentRun) => {
      // the run reads as a key limited to its agent would: the organization's files and its own
      const reader: Principal = {
        organizationId: run.organizationId,
        userId: null,
        keyId: "agent" as Principal["keyId"],
        role: "member",
        agentIds: [run.agentId]
      }
      const writer: Writer = {
        organizationId: run.organizationId,
        agentId: run.agentId,
        owner: { type: "agent", id: run.agentId },
        auditAs: {
          organizationId: run.organizationId,
          actor: { type: "system", id: `agent:${run.agentId}`, key_id: null }
        },
        details: { task_id: run.taskId }
      }
      const byName = (name: string) =>
        Effect.gen(function*() {
          const own = yield* files.findByName(run.organizationId, run.agentId, name)
          const row = own ?? (yield* files.findByName(run.organizationId, null, name))
          if (row === undefined) return yield* NotFound.of("File", name)
          return row
        })
      return {
        list: (prefix: string | undefined, cursor: string | undefined) =>
          files.list(reader, { prefix, cursor, limit: 100 }),
        read: (name: string, offset = 0) =>
          Effect.flatMap(byName(name), (row) => window(row, offset, DEFAULT_TEXT_READ)),
        write: (name: string, text: string) =>
          files.store(writer, { name, contentType: textTypeOf(name), overwrite: true }, textBody(text))
      }
    }

    return { readText, writeText, forAgent } as const
  }),
  dependencies: [Files.Default]
}) {}
