import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Rate-limit counters shared by every node: one row per limited subject (`api_key:<id>`, `password_ip:<ip>`,
 * …), counting attempts in a window that opens at the subject's first counted attempt. UNLOGGED: the
 * counters are written on every failed attempt, so an attacker's flood must not become WAL traffic; a
 * crash that empties the table only gives every subject a fresh window.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE UNLOGGED TABLE rate_limit_buckets (
      key text PRIMARY KEY,
      window_start timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      count int NOT NULL
    )`
  yield* sql`CREATE INDEX rate_limit_buckets_expiry ON rate_limit_buckets (expires_at)`
})
