import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The settings every node on the database must share, beside the key's fingerprint (0031): the number of
 * shards, recorded by the first node that starts on it (src/config/SharedSettingsCheck.ts). Tasks keep their
 * shard (0015): under another number, a node would sweep shards that hold none of them, and the unfinished
 * tasks of the others would wait for ever.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE secret_key_check ADD COLUMN shards_per_group integer`
})
