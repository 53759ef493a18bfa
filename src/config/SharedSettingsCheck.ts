import { SqlClient } from "@effect/sql"
import { ConfigError, Effect, Layer, Redacted } from "effect"
import * as Crypto from "node:crypto"
import { SecretKey } from "./SecretKey.js"
import { SwitchyardConfig } from "./SwitchyardConfig.js"

/** What the database keeps of the key: an HKDF output, from which the key cannot be recovered. */
const fingerprintOf = (key: Uint8Array) =>
  Buffer.from(Crypto.hkdfSync("sha256", key, Buffer.alloc(0), "switchyard secret key check v1", 32))

/**
 * Refuses to start a node whose settings differ from those the database was set up with, which every node
 * sharing it must use:
 *   - SWITCHYARD_SECRET_KEY: a node with another key would look healthy, fail to open the credentials of the
 *     connections on its shards, and seal new ones that no other node can open;
 *   - SWITCHYARD_SHARDS_PER_GROUP: tasks keep their shard, and under another number the sweeps would look in
 *     shards that hold none of them (unfinished tasks waiting for ever) while the cluster's shards are split
 *     two ways.
 * The first node to start on a database records them (on a database from before a check: the first node
 * started after the upgrade). Runs after migrations, before the node takes shards.
 */
export const SharedSettingsCheckLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const shards = (yield* SwitchyardConfig).sharding.shardsPerGroup
    const fingerprint = fingerprintOf(Redacted.value(yield* SecretKey))
    yield* sql`
      INSERT INTO secret_key_check (fingerprint, shards_per_group) VALUES (${fingerprint}, ${shards})
      ON CONFLICT (id) DO UPDATE SET shards_per_group = ${shards} WHERE secret_key_check.shards_per_group IS NULL`
    const [row] = yield* sql<{ fingerprint: Uint8Array; shards_per_group: number }>`
      SELECT fingerprint, shards_per_group FROM secret_key_check`
    if (!Crypto.timingSafeEqual(Buffer.from(row!.fingerprint), fingerprint)) {
      return yield* Effect.fail(ConfigError.InvalidData(
        ["SWITCHYARD_SECRET_KEY"],
        "is not the key this database's secrets are encrypted with: every node sharing the database must use the same key"
      ))
    }
    if (row!.shards_per_group !== shards) {
      return yield* Effect.fail(ConfigError.InvalidData(
        ["SWITCHYARD_SHARDS_PER_GROUP"],
        `is ${shards}, and this database's tasks are placed in ${row!.shards_per_group} shards: every node ` +
          `sharing the database must use ${row!.shards_per_group}`
      ))
    }
  }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("SharedSettingsCheck"))
)
