import { SqlClient } from "@effect/sql"
import { Effect, Stream } from "effect"
import * as Crypto from "node:crypto"
import { BadRequest, Forbidden, NotFound, PayloadTooLarge } from "../../schema/Errors.js"
import { type FileId, fileNameProblem, type FileOwner, WorkspaceFile } from "../../schema/Files.js"
import type { AgentId, OrganizationId } from "../../schema/Ids.js"
import { type Permission, Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { AgentRepo } from "../agents/AgentRepo.js"
import { mayUse, requireFilterAgent } from "../agents/Agents.js"
import { type AuditBy, AuditLog } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { transactionIn } from "../db/Transaction.js"
import { requirePermission } from "../identity/IdentityPolicy.js"
import { invalidField } from "../support/Issues.js"
import { isUuid } from "../support/Uuid.js"
import { fileExists, FileRepo, type FileRow } from "./FileRepo.js"
import { FileStore } from "./FileStore.js"
import { PgFileStoreLive } from "./PgFileStore.js"

export const toFile = (row: FileRow) =>
  new WorkspaceFile({
    id: row.id,
    name: row.name,
    size: Number(row.size),
    sha256: row.sha256,
    content_type: row.content_type,
    scope: row.agent_id === null ? "organization" : "agent",
    agent_id: row.agent_id,
    owner: { type: row.owner_type, id: row.owner_id },
    created_at: row.created_at
  })

/** Who writes a file, in which scope, and who the audit log names. */
export interface Writer {
  readonly organizationId: OrganizationId
  readonly agentId: AgentId | null
  readonly owner: FileOwner
  readonly auditAs: Principal | AuditBy
  readonly details?: Record<string, unknown>
}

export interface FileInput {
  readonly name: string | undefined
  readonly contentType: string
  readonly overwrite: boolean
  /** The body's declared length, when it is the file's (a raw upload): refused at once past the limit. */
  readonly declaredBytes?: number | undefined
}

/** `type/subtype`, with parameters. */
const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+(\s*;[\x20-\x7e]*)?$/i

/**
 * Workspace files: an organization's, and each agent's. Content streams through to the FileStore, never
 * whole in memory, up to SWITCHYARD_MAX_FILE_BYTES. Any key reads the files it can see; Builders and above
 * write and delete them. A key limited to agents (an organization key's `agent_ids`, a Member's group
 * agents) sees what its agents see: the organization's files and those agents' workspaces, and writes only
 * in those workspaces. Uploads and deletions are audited.
 */
export class Files extends Effect.Service<Files>()("files/Files", {
  effect: Effect.gen(function*() {
    const repo = yield* FileRepo
    const agents = yield* AgentRepo
    const store = yield* FileStore
    const audit = yield* AuditLog
    const config = yield* SwitchyardConfig
    const transaction = transactionIn(yield* SqlClient.SqlClient)
    const maxBytes = config.maxFileBytes
    const quota = config.orgFileQuotaBytes

    const tooLarge = PayloadTooLarge.of(
      `The file is larger than this server accepts: at most ${maxBytes} bytes (SWITCHYARD_MAX_FILE_BYTES).`,
      "file_too_large"
    )
    const overQuota = (used: number) =>
      PayloadTooLarge.of(
        `The file does not fit in the organization's storage quota of ${quota} bytes ` +
          `(SWITCHYARD_ORG_FILE_QUOTA_BYTES): its files take ${used} bytes already. Delete files, or ask an ` +
          "operator to raise the quota.",
        "storage_quota_exceeded"
      )

    /**
     * The most an upload may store: the server's limit, or what the quota leaves (with what the file it
     * overwrites frees). Checked again, under a lock, when the file is made visible (FileRepo.finish).
     */
    const roomFor = (writer: Writer, input: { readonly name: string; readonly overwrite: boolean }) =>
      Effect.gen(function*() {
        if (quota === 0) return { limit: maxBytes, used: 0 }
        const used = yield* repo.usedBytes(writer.organizationId)
        const freed = input.overwrite
          ? Number((yield* repo.findByName(writer.organizationId, writer.agentId, input.name))?.size ?? 0)
          : 0
        return { limit: Math.min(maxBytes, Math.max(0, quota - used + freed)), used }
      })

    const readable = (principal: Principal, row: FileRow) => row.agent_id === null || mayUse(principal, row.agent_id)

    const find = (principal: Principal, id: string) =>
      Effect.gen(function*() {
        const row = isUuid(id) ? yield* repo.find(principal.organizationId, id as FileId) : undefined
        if (row === undefined || !readable(principal, row)) return yield* NotFound.of("File", id)
        return row
      })

    /** The agent a caller names must be one of the organization's that it may use. */
    const usableAgent = (principal: Principal, agentId: AgentId) =>
      Effect.gen(function*() {
        if (mayUse(principal, agentId) && (yield* repo.agentExists(principal.organizationId, agentId))) return agentId
        return yield* BadRequest.of(
          `There is no agent ${agentId} in this organization that you can use.`,
          undefined,
          "unknown_agent"
        )
      })

    /** Builders and above change files; a key limited to agents only in those agents' workspaces. */
    const mayChange = (principal: Principal, agentId: AgentId | null, permission: Permission) =>
      Effect.gen(function*() {
        yield* requirePermission(principal, permission)
        if (agentId === null && principal.agentIds !== null) {
          return yield* Forbidden.of(
            `This key is limited to agents: it may ${permission.action} in those agents' workspaces only (give \`agent_id\`).`
          )
        }
      })

    /** Where a caller may write: as `mayChange` says, in a live agent of the organization it may use. */
    const writerFor = (principal: Principal, agentId: AgentId | undefined, permission: Permission) =>
      Effect.gen(function*() {
        yield* mayChange(principal, agentId ?? null, permission)
        const scope = agentId === undefined ? null : yield* usableAgent(principal, agentId)
        return {
          organizationId: principal.organizationId,
          agentId: scope,
          owner: principal.userId === null
            ? { type: "api_key", id: principal.keyId }
            : { type: "user", id: principal.userId },
          auditAs: principal
        } satisfies Writer
      })

    /**
     * Streams `body` into a new file and makes it visible, or leaves nothing behind: a failed or interrupted
     * upload is discarded. A name taken in the scope is a 409 unless `overwrite`, checked before the body is
     * read and again when the file is made visible.
     */
    const store_ = <E, R>(
      writer: Writer,
      input: FileInput & { readonly name: string },
      body: Stream.Stream<Uint8Array, E, R>
    ) =>
      Effect.gen(function*() {
        const problem = fileNameProblem(input.name)
        if (problem !== undefined) return yield* invalidField("name", problem)
        if (!MEDIA_TYPE.test(input.contentType) || input.contentType.length > 255) {
          return yield* invalidField("content_type", "must be a media type such as text/csv (at most 255 characters)")
        }
        if (input.declaredBytes !== undefined && input.declaredBytes > maxBytes) return yield* tooLarge
        if (!input.overwrite && (yield* repo.findByName(writer.organizationId, writer.agentId, input.name))) {
          return yield* fileExists(input.name)
        }
        const room = yield* roomFor(writer, { name: input.name, overwrite: input.overwrite })
        // past the quota's room (not the server's limit): told so before a byte is read
        const roomError = room.limit < maxBytes ? overQuota(room.used) : tooLarge
        if (input.declaredBytes !== undefined && input.declaredBytes > room.limit) return yield* roomError
        const id = Crypto.randomUUID() as FileId
        const target = { id, organizationId: writer.organizationId, agentId: writer.agentId, name: input.name }
        yield* repo.begin({ ...target, contentType: input.contentType, owner: writer.owner })
        return yield* Effect.gen(function*() {
          const content = yield* store.put(id, body, room.limit).pipe(
            Effect.catchTag("ContentTooLarge", () => roomError)
          )
          return yield* transaction(Effect.gen(function*() {
            const finished = yield* repo.finish(target, content, input.overwrite, quota)
            // another upload took the room meanwhile: this one fails, and the file it would replace stays
            if ("overQuota" in finished) return yield* overQuota(finished.overQuota)
            const { replaced, row } = finished
            yield* audit.record(writer.auditAs, {
              action: "CREATE_FILE",
              targets: [{ type: "file", id: row.id, name: row.name }],
              details: {
                size: content.size,
                sha256: content.sha256,
                agent_id: row.agent_id,
                replaced_file_id: replaced,
                ...writer.details
              }
            })
            return toFile(row)
          }))
        }).pipe(
          Effect.onExit((exit) => exit._tag === "Success" ? Effect.void : repo.discard(id)),
          Effect.withSpan("Files.store", { captureStackTrace: false })
        )
      })

    /** `POST /v1/files`: a raw or multipart body, as the caller. */
    const upload = <E, R>(
      principal: Principal,
      input: FileInput & { readonly agentId: AgentId | undefined },
      body: Stream.Stream<Uint8Array, E, R>
    ) =>
      Effect.gen(function*() {
        const writer = yield* writerFor(principal, input.agentId, Policy.uploadFiles)
        if (input.name === undefined) {
          return yield* invalidField(
            "name",
            "is required: send `?name=reports/q1.csv` (a multipart upload may use a `name` field or the file's filename)"
          )
        }
        return yield* store_(writer, { ...input, name: input.name }, body)
      })

    const list = Effect.fn("Files.list")(function*(principal: Principal, f: {
      readonly prefix?: string | undefined
      readonly agent_id?: AgentId | undefined
      readonly limit?: number | undefined
      readonly cursor?: string | undefined
    }) {
      const after = yield* positionOf(f.cursor)
      const limit = f.limit ?? 50
      // an agent the caller cannot see is 404, as the other listings filtered by agent answer
      if (f.agent_id !== undefined) yield* requireFilterAgent(agents, principal, f.agent_id)
      const rows = yield* repo.list(principal.organizationId, {
        agents: principal.agentIds,
        agentId: f.agent_id,
        prefix: f.prefix,
        after,
        limit: limit + 1
      })
      const page = rows.slice(0, limit)
      const last = page[page.length - 1]
      return {
        items: page.map(toFile),
        next_cursor: rows.length > limit && last !== undefined ? cursorOf(last) : null
      }
    })

    const get = (principal: Principal, id: string) => Effect.map(find(principal, id), toFile)

    const remove = Effect.fn("Files.remove")(function*(principal: Principal, id: string) {
      const row = yield* find(principal, id)
      // a deleted agent's files can still be deleted: the file is found, its agent need not be live
      yield* mayChange(principal, row.agent_id, Policy.deleteFiles)
      yield* transaction(Effect.gen(function*() {
        const removed = yield* repo.remove(principal.organizationId, row.id)
        if (removed === undefined) return yield* NotFound.of("File", id)
        yield* store.delete(row.id)
        yield* audit.record(principal, {
          action: "DELETE_FILE",
          targets: [{ type: "file", id: row.id, name: row.name }],
          details: { size: Number(row.size), sha256: row.sha256, agent_id: row.agent_id }
        })
      }))
    })

    /** A file the caller may read, for its content to be served. */
    const open = (principal: Principal, id: string) => find(principal, id)

    /** Bytes `start`–`end` (inclusive) of a file; not found if it is deleted or replaced while read. */
    const content = (row: FileRow, start: number, end: number): Stream.Stream<Uint8Array, NotFound> =>
      Number(row.size) === 0 || end < start ? Stream.empty : store.read(row.id, start, end).pipe(
        Stream.catchTag("ContentGone", () =>
          Stream.fail(
            new NotFound({
              code: "not_found",
              message: `The file '${row.name}' was deleted or replaced while it was read: look it up again.`
            })
          ))
      )

    return {
      upload,
      store: store_,
      writerFor,
      usableAgent,
      list,
      get,
      remove,
      open,
      content,
      find,
      findByName: repo.findByName,
      readable
    } as const
  }),
  dependencies: [FileRepo.Default, AgentRepo.Default, PgFileStoreLive, AuditLog.Default]
}) {}

const cursorOf = (row: FileRow) => Buffer.from(JSON.stringify([row.name, row.id])).toString("base64url")

const positionOf = (cursor: string | undefined) => {
  if (cursor === undefined) return Effect.succeed(undefined)
  try {
    const [name, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    if (typeof name === "string" && fileNameProblem(name) === undefined && typeof id === "string" && isUuid(id)) {
      return Effect.succeed({ name, id })
    }
  } catch {
    // not ours
  }
  return Effect.fail(
    BadRequest.of("`cursor` is not one this API returned; start again without it.", undefined, "invalid_cursor")
  )
}
