import { SqlClient } from "@effect/sql"
import { ConfigError, Effect, Layer, Redacted } from "effect"
import * as Crypto from "node:crypto"
import { SecretKey } from "./SecretKey.js"

/** What the database keeps of the key: an HKDF output, from which the key cannot be recovered. */
const fingerprintOf = (key: Uint8Array) =>
  Buffer.from(Crypto.hkdfSync("sha256", key, Buffer.alloc(0), "switchyard secret key check v1", 32))

/**
 * Refuses to start a node whose SWITCHYARD_SECRET_KEY is not the key the database's secrets are sealed with.
 * Such a node would look healthy, fail to open the credentials of the connections on its shards, and seal
 * new ones that no other node can open. The first node to start on a database records its key's fingerprint
 * (on a database from before this check: the first node started after the upgrade). Runs after migrations,
 * before the node takes shards.
 */
export const SecretKeyCheckLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const fingerprint = fingerprintOf(Redacted.value(yield* SecretKey))
    yield* sql`INSERT INTO secret_key_check (fingerprint) VALUES (${fingerprint}) ON CONFLICT (id) DO NOTHING`
    const [row] = yield* sql<{ fingerprint: Uint8Array }>`SELECT fingerprint FROM secret_key_check`
    if (!Crypto.timingSafeEqual(Buffer.from(row!.fingerprint), fingerprint)) {
      return yield* Effect.fail(ConfigError.InvalidData(
        ["SWITCHYARD_SECRET_KEY"],
        "is not the key this database's secrets are encrypted with: every node sharing the database must use the same key"
      ))
    }
  }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("SecretKeyCheck"))
)
