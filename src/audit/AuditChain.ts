import * as Crypto from "node:crypto"
import { formatTimestamp } from "../../schema/Timestamp.js"

/** `prev_hash` of an organization's first record. */
export const GENESIS_HASH = "0".repeat(64)

/** A record as it is hashed: everything but its own `hash`. */
export interface ChainedRecord {
  readonly id: string
  readonly seq: number
  readonly time: Date
  readonly organization_id: string
  readonly actor_type: string
  readonly actor_id: string
  readonly actor_key_id: string | null
  readonly action: string
  readonly targets: unknown
  readonly outcome: string
  readonly ip: string | null
  readonly user_agent: string | null
  readonly request_id: string | null
  readonly details: unknown
  readonly prev_hash: string
}

/** JSON with object keys sorted at every level and no whitespace: one text per value. */
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null)
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
}

export const hashRecord = (record: ChainedRecord): string =>
  Crypto.createHash("sha256")
    .update(canonicalJson({
      id: record.id,
      seq: record.seq,
      time: formatTimestamp(record.time),
      organization_id: record.organization_id,
      actor: { type: record.actor_type, id: record.actor_id, key_id: record.actor_key_id },
      action: record.action,
      targets: record.targets,
      outcome: record.outcome,
      ip: record.ip,
      user_agent: record.user_agent,
      request_id: record.request_id,
      details: record.details,
      prev_hash: record.prev_hash
    }))
    .digest("hex")

/**
 * What is stored must read back identically, or the chain would break by itself: PostgreSQL refuses NUL
 * in text and jsonb, and JSON drops `undefined` and non-finite numbers.
 */
export const storable = <A>(value: A): A => {
  if (value === undefined || value === null) return null as A
  return JSON.parse(JSON.stringify(value, (_, v) => typeof v === "string" ? v.replaceAll("\u0000", "") : v))
}
