import { HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, FiberRef, Option } from "effect"
import * as Crypto from "node:crypto"
import type { AuditActor, AuditOutcome, AuditTarget } from "../../schema/Audit.js"
import type { OrganizationId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { transactionIn } from "../db/Transaction.js"
import { conflictOnUnique } from "../db/UniqueViolation.js"
import { CurrentRequest } from "../http/RequestContext.js"
import { storableText } from "../support/StorableText.js"
import { GENESIS_HASH, hashRecord, storable } from "./AuditChain.js"

/** One change (or refusal) to record. */
export interface AuditEntry {
  readonly action: string
  readonly targets: ReadonlyArray<AuditTarget>
  /** Default `success`. */
  readonly outcome?: AuditOutcome
  readonly details?: Record<string, unknown>
}

/** Who acted, when it is not a request's Principal (the command line, a sign-in, a background job). */
export interface AuditBy {
  readonly organizationId: OrganizationId
  readonly actor: AuditActor
}

/** Where the request came from; read from the request being handled unless given. */
export interface RequestMeta {
  readonly ip: string | null
  readonly userAgent: string | null
  readonly requestId: string | null
}

/**
 * The fields a PATCH gave (those not undefined), sorted: an update's `details.changed`. None: the update changed
 * nothing, and records nothing.
 */
export const changedFields = (input: object): ReadonlyArray<string> =>
  Object.keys(input).filter((k) => (input as Record<string, unknown>)[k] !== undefined).sort()

/** A personal key acts for its user; an organization key for itself. */
export const actorOf = (principal: Principal): AuditActor =>
  principal.userId === null
    ? { type: "api_key", id: principal.keyId, key_id: principal.keyId }
    : { type: "user", id: principal.userId, key_id: principal.keyId }

const byOf = (who: Principal | AuditBy): AuditBy =>
  "actor" in who ? who : { organizationId: who.organizationId, actor: actorOf(who) }

const lastForwarded = (header: string | undefined) => {
  const hops = header?.split(",").map((s) => s.trim()).filter((s) => s !== "")
  return hops === undefined || hops.length === 0 ? undefined : hops[hops.length - 1]
}

/**
 * The audit log: an append-only, per-organization hash chain. `record` joins the caller's SQL transaction
 * (or opens one), so a change and its record commit together or not at all. Appends to one organization's
 * chain are serialized by locking its head row until the transaction ends. A record that cannot be written is a
 * defect (logged, answered 503 or 500): the change it records rolls back with it.
 */
export class AuditLog extends Effect.Service<AuditLog>()("audit/AuditLog", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const transaction = transactionIn(sql)
    // SWITCHYARD_TRUST_PROXY, checked with the other settings before the node starts: behind a load balancer,
    // the client is the last hop it appended to X-Forwarded-For
    const { trustProxy } = yield* SwitchyardConfig

    const currentMeta: Effect.Effect<RequestMeta> = Effect.gen(function*() {
      const info = yield* FiberRef.get(CurrentRequest)
      const request = yield* Effect.serviceOption(HttpServerRequest.HttpServerRequest)
      if (Option.isNone(request)) return { ip: null, userAgent: null, requestId: info?.requestId ?? null }
      const headers = request.value.headers
      const forwarded = trustProxy ? lastForwarded(headers["x-forwarded-for"]) : undefined
      return {
        ip: forwarded ?? Option.getOrNull(request.value.remoteAddress),
        userAgent: headers["user-agent"] ?? null,
        requestId: info?.requestId ?? headers["x-request-id"] ?? null
      }
    })

    const append = (by: AuditBy, entry: AuditEntry, meta: RequestMeta) =>
      Effect.gen(function*() {
        const [head] = yield* sql<{ seq: string; hash: string }>`
          INSERT INTO audit_chain_heads (organization_id, seq, hash) VALUES (${by.organizationId}, 0, ${GENESIS_HASH})
          ON CONFLICT (organization_id) DO UPDATE SET seq = audit_chain_heads.seq
          RETURNING seq, hash`
        const record = {
          id: Crypto.randomUUID(),
          seq: Number(head!.seq) + 1,
          time: new Date(),
          organization_id: by.organizationId,
          actor_type: by.actor.type,
          actor_id: storableText(by.actor.id, 200)!,
          actor_key_id: storableText(by.actor.key_id, 200),
          action: entry.action,
          targets: storable(entry.targets),
          outcome: entry.outcome ?? "success",
          ip: storableText(meta.ip, 100),
          user_agent: storableText(meta.userAgent, 500),
          request_id: storableText(meta.requestId, 200),
          details: storable(entry.details ?? null),
          prev_hash: head!.hash
        }
        const hash = hashRecord(record)
        yield* sql`
          WITH appended AS (
            INSERT INTO audit_events (organization_id, seq, id, time, actor_type, actor_id, actor_key_id, action, targets,
                                      outcome, ip, user_agent, request_id, details, prev_hash, hash)
            VALUES (${record.organization_id}, ${record.seq}, ${record.id}, ${record.time}, ${record.actor_type},
                    ${record.actor_id}, ${record.actor_key_id}, ${record.action}, ${
          JSON.stringify(record.targets)
        }::jsonb,
                    ${record.outcome}, ${record.ip}, ${record.user_agent}, ${record.request_id},
                    ${
          record.details === null ? null : JSON.stringify(record.details)
        }::jsonb, ${record.prev_hash}, ${hash})
          )
          UPDATE audit_chain_heads SET seq = ${record.seq}, hash = ${hash}
          WHERE organization_id = ${record.organization_id}`.pipe(
          // the head is behind the records (its row removed or rolled back by hand): refuse, never fork the chain
          conflictOnUnique(() =>
            Effect.die(
              new Error(
                `The audit chain of organization ${by.organizationId} is damaged: its head is behind its records. ` +
                  "Audited changes are refused until it is repaired; `switchyard audit verify` reports the break."
              )
            )
          )
        )
      }).pipe(Effect.orDie)

    /**
     * Appends one record. Inside a transaction it is part of it (the usual case: the change, then its
     * record); outside one it is a transaction of its own. Request metadata comes from the request being
     * handled unless `meta` is given.
     */
    const record = (who: Principal | AuditBy, entry: AuditEntry, meta?: RequestMeta): Effect.Effect<void> =>
      Effect.gen(function*() {
        const m = meta ?? (yield* currentMeta)
        const inTransaction = Option.isSome(yield* Effect.serviceOption(SqlClient.TransactionConnection))
        const write = append(byOf(who), entry, m)
        return yield* inTransaction ? write : transaction(write)
      }).pipe(Effect.withSpan("AuditLog.record", { attributes: { action: entry.action }, captureStackTrace: false }))

    /**
     * `change` and its record in one transaction: `describe` names the record from the change's result, or
     * gives `undefined` when nothing changed (nothing is recorded then).
     */
    const recorded =
      <A>(who: Principal | AuditBy, describe: (a: A) => AuditEntry | undefined) =>
      <E, R>(change: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
        transaction(
          Effect.tap(change, (a) => {
            const entry = describe(a)
            return entry === undefined ? Effect.void : record(who, entry)
          })
        )

    return { record, recorded, currentMeta } as const
  })
}) {}
