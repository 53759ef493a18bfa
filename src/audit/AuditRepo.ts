import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { AuditEvent } from "../../schema/Audit.js"
import type { OrganizationId } from "../../schema/Ids.js"
import type { ChainedRecord } from "./AuditChain.js"

export interface AuditRow extends ChainedRecord {
  readonly hash: string
}

export interface AuditQuery {
  readonly eventType?: string | undefined
  readonly actor?: string | undefined
  readonly target?: string | undefined
  readonly from?: Date | undefined
  readonly to?: Date | undefined
}

type RawRow = Omit<AuditRow, "seq"> & { readonly seq: string }

const toRow = (raw: RawRow): AuditRow => ({ ...raw, seq: Number(raw.seq) })

export const toAuditEvent = (row: AuditRow) =>
  new AuditEvent({
    id: row.id,
    seq: row.seq,
    time: row.time,
    organization_id: row.organization_id as OrganizationId,
    actor: { type: row.actor_type as AuditEvent["actor"]["type"], id: row.actor_id, key_id: row.actor_key_id },
    action: row.action,
    targets: row.targets as AuditEvent["targets"],
    outcome: row.outcome as AuditEvent["outcome"],
    ip: row.ip,
    user_agent: row.user_agent,
    request_id: row.request_id,
    details: row.details as AuditEvent["details"],
    prev_hash: row.prev_hash,
    hash: row.hash
  })

/**
 * Reads of the audit log; every query is scoped to one organization. Records are never updated. A failed read is
 * a defect.
 */
export class AuditRepo extends Effect.Service<AuditRepo>()("audit/AuditRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const filters = (q: AuditQuery) =>
      sql.and([
        ...(q.eventType === undefined ? [] : [sql`action = ${q.eventType}`]),
        ...(q.actor === undefined ? [] : [sql`(actor_id = ${q.actor} OR actor_key_id = ${q.actor})`]),
        ...(q.target === undefined ? [] : [sql`targets @> ${JSON.stringify([{ id: q.target }])}::jsonb`]),
        ...(q.from === undefined ? [] : [sql`time >= ${q.from}`]),
        ...(q.to === undefined ? [] : [sql`time < ${q.to}`])
      ])

    /** Newest first, before `beforeSeq`. */
    const page = (organizationId: OrganizationId, q: AuditQuery, beforeSeq: number | undefined, limit: number) =>
      sql<RawRow>`
        SELECT * FROM audit_events
        WHERE organization_id = ${organizationId} ${beforeSeq === undefined ? sql`` : sql`AND seq < ${beforeSeq}`}
          AND ${filters(q)}
        ORDER BY seq DESC LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(toRow)), Effect.orDie)

    /** Oldest first, after `afterSeq`: export and verification walk the chain in order, a page at a time. */
    const pageAscending = (organizationId: OrganizationId, q: AuditQuery, afterSeq: number, limit: number) =>
      sql<RawRow>`
        SELECT * FROM audit_events
        WHERE organization_id = ${organizationId} AND seq > ${afterSeq} AND ${filters(q)}
        ORDER BY seq LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(toRow)), Effect.orDie)

    const head = (organizationId: OrganizationId) =>
      sql<{ seq: string; hash: string }>`
        SELECT seq, hash FROM audit_chain_heads WHERE organization_id = ${organizationId}`.pipe(
        Effect.map(([row]) => row === undefined ? undefined : { seq: Number(row.seq), hash: row.hash }),
        Effect.orDie
      )

    /** Organizations with a chain, or that one if it exists. */
    const organizations = (only: string | undefined) =>
      sql<{ id: OrganizationId }>`
        SELECT id FROM organizations ${only === undefined ? sql`` : sql`WHERE id::text = ${only}`} ORDER BY id`.pipe(
        Effect.map((rows) => rows.map((r) => r.id)),
        Effect.orDie
      )

    return { page, pageAscending, head, organizations } as const
  })
}) {}
