import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A fingerprint of the SWITCHYARD_SECRET_KEY the database's secrets are sealed with, recorded by the first
 * node that starts on it: a node given another key refuses to start (src/config/SecretKeyCheck.ts). One row.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE secret_key_check (
      id boolean PRIMARY KEY DEFAULT true CHECK (id),
      fingerprint bytea NOT NULL,
      recorded_at timestamptz NOT NULL DEFAULT now()
    )`
})
