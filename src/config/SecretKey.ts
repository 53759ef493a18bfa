import { ConfigError, Context, Effect, Layer, Option, Redacted } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { decodeSecretKey, SwitchyardConfig } from "./SwitchyardConfig.js"

/**
 * The key-encryption key for secrets at rest (connection credentials, provider keys).
 * SWITCHYARD_SECRET_KEY, or, for the embedded database only, a key generated once into the data dir:
 * a shared database needs every node to hold the same key, so there it must be given.
 */
export class SecretKey extends Context.Tag("switchyard/SecretKey")<SecretKey, Redacted.Redacted<Uint8Array>>() {
  static readonly layer = Layer.effect(
    SecretKey,
    Effect.gen(function*() {
      const config = yield* SwitchyardConfig
      if (Option.isSome(config.secretKey)) return config.secretKey.value
      if (Option.isSome(config.databaseUrl)) {
        return yield* Effect.fail(ConfigError.MissingData(
          ["SWITCHYARD_SECRET_KEY"],
          "required with DATABASE_URL (32 bytes, base64: `openssl rand -base64 32`); every node sharing the database must use the same key"
        ))
      }
      const file = Path.join(config.dataDir, "secret.key")
      if (!Fs.existsSync(file)) {
        Fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 })
        Fs.writeFileSync(file, Crypto.randomBytes(32).toString("base64") + "\n", { mode: 0o600, flag: "wx" })
      }
      const key = decodeSecretKey(Fs.readFileSync(file, "utf8"))
      if (key === undefined) {
        return yield* Effect.dieMessage(`${file} does not hold a 32-byte key; restore it from backup`)
      }
      return Redacted.make(key)
    })
  )
}
