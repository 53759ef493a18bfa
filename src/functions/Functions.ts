import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { BadRequest, Conflict, NotFound } from "../../schema/Errors.js"
import {
  type CreateFunction,
  CustomFunction,
  FUNCTION_LIMITS,
  type FunctionId,
  type UpdateFunction
} from "../../schema/Functions.js"
import type { AgentId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { AgentRepo } from "../agents/AgentRepo.js"
import { mayUse } from "../agents/Agents.js"
import { AuditLog, changedFields } from "../audit/AuditLog.js"
import { compile } from "../connectors/openapi/InputValidator.js"
import { transactionIn } from "../db/Transaction.js"
import { Files } from "../files/Files.js"
import { Workspace } from "../files/Workspace.js"
import { requireOrganizationKey, requirePermission } from "../identity/IdentityPolicy.js"
import { listOrPage, type PageParams } from "../support/Cursor.js"
import { type CallScope, fileRead, filesListed, FunctionCalls, type FunctionFiles } from "./FunctionCalls.js"
import { FunctionRepo, type FunctionRow, type VersionFields } from "./FunctionRepo.js"

export const toFunction = (row: FunctionRow) =>
  new CustomFunction({
    id: row.id,
    name: row.name,
    description: row.description,
    input_schema: row.input_schema,
    code: row.code,
    timeout_ms: row.timeout_ms,
    memory_mb: row.memory_mb,
    version: row.version,
    current_version: row.current_version,
    created_at: row.created_at,
    updated_at: row.updated_at
  })

/** A JSON Schema the project's validator (Ajv 2020-12) compiles, else 400 `invalid_input_schema`. */
const checkSchema = (schema: Record<string, unknown>) =>
  Effect.suspend(() => {
    if (Buffer.byteLength(JSON.stringify(schema)) > FUNCTION_LIMITS.maxSchemaBytes) {
      return Effect.fail(
        BadRequest.of("`input_schema` is larger than 64 KiB of JSON.", undefined, "invalid_input_schema")
      )
    }
    try {
      compile(structuredClone(schema))
      return Effect.void
    } catch (e) {
      return Effect.fail(BadRequest.of(
        `\`input_schema\` is not a JSON Schema this service can check: ${(e as Error).message}`,
        undefined,
        "invalid_input_schema"
      ))
    }
  })

const nameTaken = (name: string) =>
  Conflict.of(`A function named '${name}' exists in this organization: pick another name.`, "function_name_taken")

/**
 * Custom functions (issue 25): versioned JavaScript that runs in the sandbox. Members list, read and invoke;
 * Builders and above write (audited). A function belongs to one organization: another's id is a 404.
 */
export class Functions extends Effect.Service<Functions>()("functions/Functions", {
  effect: Effect.gen(function*() {
    const repo = yield* FunctionRepo
    const agents = yield* AgentRepo
    const audit = yield* AuditLog
    const calls = yield* FunctionCalls
    const files = yield* Files
    const workspace = yield* Workspace
    const transaction = transactionIn(yield* SqlClient.SqlClient)

    const find = (principal: Principal, id: FunctionId, version?: number) =>
      Effect.flatMap(repo.find(principal.organizationId, id, version), (row) =>
        row === undefined
          ? Effect.fail(NotFound.of(version === undefined ? "Function" : `Version ${version} of function`, id))
          : Effect.succeed(row))

    const usableAgent = (principal: Principal, id: AgentId) =>
      (mayUse(principal, id) ? agents.find(principal.organizationId, id) : Effect.succeed(undefined)).pipe(
        Effect.flatMap((row) => row === undefined ? Effect.fail(NotFound.of("Agent", id)) : Effect.succeed(row))
      )

    const authorOf = (principal: Principal) => ({ userId: principal.userId, keyId: principal.keyId })

    const create = Effect.fn("Functions.create")(function*(principal: Principal, input: CreateFunction) {
      yield* requireOrganizationKey(principal, Policy.createFunctions)
      const fields: VersionFields = {
        name: input.name,
        description: input.description ?? "",
        input_schema: input.input_schema ?? { type: "object" },
        code: input.code,
        timeout_ms: input.timeout_ms ?? FUNCTION_LIMITS.defaultTimeoutMs,
        memory_mb: input.memory_mb ?? FUNCTION_LIMITS.defaultMemoryMb
      }
      yield* checkSchema(fields.input_schema)
      yield* calls.load(principal.organizationId, fields.code, {
        timeoutMs: fields.timeout_ms,
        memoryMb: fields.memory_mb
      })
      const id = Crypto.randomUUID() as FunctionId
      const row = yield* repo.insert(principal.organizationId, id, fields, authorOf(principal)).pipe(
        Effect.catchAll(() => Effect.fail(nameTaken(fields.name))),
        audit.recorded(principal, (row) => ({
          action: "CREATE_FUNCTION",
          targets: [{ type: "function", id: row.id, name: row.name }],
          details: { version: 1, timeout_ms: row.timeout_ms, memory_mb: row.memory_mb }
        }))
      )
      return toFunction(row)
    })

    /** The function with the change: what a PATCH would make its next version. */
    const changed = (current: FunctionRow, input: UpdateFunction): VersionFields => ({
      name: input.name ?? current.name,
      description: input.description ?? current.description,
      input_schema: input.input_schema ?? current.input_schema,
      code: input.code ?? current.code,
      timeout_ms: input.timeout_ms ?? current.timeout_ms,
      memory_mb: input.memory_mb ?? current.memory_mb
    })

    /** Whether the fields are the function's own already: no new version (and nothing to audit). */
    const same = (current: FunctionRow, fields: VersionFields) =>
      (Object.keys(fields) as Array<keyof VersionFields>).every((k) =>
        k === "input_schema"
          ? JSON.stringify(fields.input_schema) === JSON.stringify(current.input_schema)
          : fields[k] === current[k]
      )

    const update = Effect.fn("Functions.update")(
      function*(principal: Principal, id: FunctionId, input: UpdateFunction) {
        yield* requireOrganizationKey(principal, Policy.changeFunctions)
        // the checks (the code's load is a sandbox run) before the row is held, against the function as read now
        const seen = yield* find(principal, id)
        const checked = changed(seen, input)
        if (!same(seen, checked)) {
          if (input.input_schema !== undefined) yield* checkSchema(checked.input_schema)
          if (input.code !== undefined) {
            yield* calls.load(principal.organizationId, checked.code, {
              timeoutMs: checked.timeout_ms,
              memoryMb: checked.memory_mb
            })
          }
        }
        // the row locked from its read to its write: two PATCHes at once (new code and a new description) each
        // make a version from what the other wrote, rather than the later writing back what the earlier changed
        return yield* transaction(Effect.gen(function*() {
          yield* repo.lock(principal.organizationId, id)
          const current = yield* find(principal, id)
          const fields = changed(current, input)
          // a change that changes nothing is no new version (and nothing to audit): the function as it is
          if (same(current, fields)) return toFunction(current)
          const row = yield* repo.update(principal.organizationId, id, fields, authorOf(principal)).pipe(
            Effect.catchAll(() => Effect.fail(nameTaken(fields.name))),
            audit.recorded(principal, (row) =>
              row === undefined || changedFields(input).length === 0 ? undefined : {
                action: "UPDATE_FUNCTION",
                targets: [{ type: "function", id, name: row.name }],
                details: {
                  version: row.version,
                  changed: changedFields(input)
                }
              })
          )
          if (row === undefined) return yield* NotFound.of("Function", id)
          return toFunction(row)
        }))
      }
    )

    const remove = Effect.fn("Functions.remove")(function*(principal: Principal, id: FunctionId) {
      yield* requireOrganizationKey(principal, Policy.deleteFunctions)
      const current = yield* find(principal, id)
      const removed = yield* repo.remove(principal.organizationId, id).pipe(
        audit.recorded(
          principal,
          (removed) =>
            removed ? { action: "DELETE_FUNCTION", targets: [{ type: "function", id, name: current.name }] } : undefined
        )
      )
      if (!removed) return yield* NotFound.of("Function", id)
    })

    /** Every function by name, or with `limit`/`cursor` a page of them oldest first (`total` counts them all). */
    const list = Effect.fn("Functions.list")(function*(
      principal: Principal,
      params: PageParams = {}
    ) {
      const { organizationId } = principal
      const { next_cursor, rows, total } = yield* listOrPage(
        params,
        (page) => repo.list(organizationId, page),
        repo.count(organizationId)
      )
      return { items: rows.map(toFunction), total, next_cursor }
    })

    const get = (principal: Principal, id: FunctionId, version?: number) =>
      Effect.map(find(principal, id, version), toFunction)

    const versions = Effect.fn("Functions.versions")(function*(principal: Principal, id: FunctionId) {
      yield* find(principal, id)
      const rows = yield* repo.versions(id)
      return { items: rows }
    })

    /** The caller's view of the workspace: what the files API lets this principal list, read and write. */
    const filesOf = (principal: Principal): FunctionFiles => ({
      list: (prefix, cursor) => Effect.map(files.list(principal, { prefix, cursor, limit: 100 }), filesListed),
      read: (name, offset) => Effect.map(workspace.readText(principal, { name }, offset ?? 0), fileRead),
      write: (name, text) =>
        Effect.map(
          workspace.writeText(principal, { name, text, overwrite: true }),
          (f) => ({ id: f.id, name: f.name, size: f.size })
        )
    })

    // versions never change: an invoke reads only which one is current, and the version itself once per node
    const versionCache = new Map<string, FunctionRow>()
    const MAX_CACHED_VERSIONS = 500
    const findVersion = (principal: Principal, id: FunctionId, version?: number) =>
      Effect.gen(function*() {
        const wanted = version ?? (yield* repo.currentVersion(principal.organizationId, id))
        if (wanted === undefined) return yield* NotFound.of("Function", id)
        const key = `${principal.organizationId}/${id}/${wanted}`
        const cached = versionCache.get(key)
        if (cached !== undefined) return cached
        const row = yield* find(principal, id, wanted)
        if (versionCache.size >= MAX_CACHED_VERSIONS) versionCache.delete(versionCache.keys().next().value!)
        versionCache.set(key, row)
        return row
      })

    /** Runs the function (its current version, or `version`) as the caller. */
    const invoke = (principal: Principal, id: FunctionId, input: unknown, version?: number) =>
      Effect.flatMap(findVersion(principal, id, version), (row) => {
        const scope: CallScope = { principal, files: filesOf(principal) }
        return calls.run(scope, row, input)
      }).pipe(Effect.withSpan("Functions.invoke", { captureStackTrace: false }))

    const attach = Effect.fn("Functions.attach")(function*(principal: Principal, agentId: AgentId, id: FunctionId) {
      yield* requirePermission(principal, Policy.attachFunctions)
      yield* usableAgent(principal, agentId)
      const fn = yield* find(principal, id)
      const row = yield* repo.attach(principal.organizationId, agentId, id).pipe(
        audit.recorded(principal, (row) =>
          row.inserted
            ? {
              action: "ATTACH_FUNCTION",
              targets: [{ type: "agent", id: agentId }, { type: "function", id, name: fn.name }]
            }
            : undefined)
      )
      return { agent_id: agentId, function_id: id, name: fn.name, attached_at: row.created_at }
    })

    const detach = Effect.fn("Functions.detach")(function*(principal: Principal, agentId: AgentId, id: FunctionId) {
      yield* requirePermission(principal, Policy.detachFunctions)
      yield* usableAgent(principal, agentId)
      const removed = yield* repo.detach(principal.organizationId, agentId, id).pipe(
        audit.recorded(principal, (removed) =>
          removed
            ? { action: "DETACH_FUNCTION", targets: [{ type: "agent", id: agentId }, { type: "function", id }] }
            : undefined)
      )
      if (!removed) return yield* NotFound.of("Attached function", id)
    })

    const attachedTo = Effect.fn("Functions.attachedTo")(function*(principal: Principal, agentId: AgentId) {
      yield* usableAgent(principal, agentId)
      const rows = yield* repo.attached(principal.organizationId, agentId)
      return {
        items: rows.map((r) => ({ agent_id: agentId, function_id: r.id, name: r.name, attached_at: r.attached_at }))
      }
    })

    return { create, update, remove, list, get, versions, invoke, attach, detach, attachedTo } as const
  })
}) {}
