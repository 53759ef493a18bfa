import { Effect, Redacted } from "effect"
import * as Crypto from "node:crypto"
import { SecretKey } from "../config/SecretKey.js"

const KEY_VERSION = 1
const NONCE_BYTES = 12
const TAG_BYTES = 16

export class VaultError extends Error {
  override readonly name = "VaultError"
}

/**
 * Secrets at rest: AES-256-GCM with a random nonce, the record's identity (organization, connector,
 * connection, key version) as associated data so a ciphertext copied to another row fails to open.
 * The data key is derived from SWITCHYARD_SECRET_KEY per purpose and version (HKDF), so rotating
 * means adding a version, not re-keying everything at once.
 */
export class CredentialVault extends Effect.Service<CredentialVault>()("connectors/CredentialVault", {
  effect: Effect.gen(function*() {
    const master = Redacted.value(yield* SecretKey)
    const keys = new Map<number, Buffer>()
    const dataKey = (version: number) => {
      let key = keys.get(version)
      if (key === undefined) {
        key = Buffer.from(Crypto.hkdfSync("sha256", master, Buffer.alloc(0), `switchyard credentials v${version}`, 32))
        keys.set(version, key)
      }
      return key
    }

    const seal = (plaintext: unknown, context: ReadonlyArray<string>) => {
      const nonce = Crypto.randomBytes(NONCE_BYTES)
      const cipher = Crypto.createCipheriv("aes-256-gcm", dataKey(KEY_VERSION), nonce)
      cipher.setAAD(Buffer.from([...context, `v${KEY_VERSION}`].join("\n")))
      const body = Buffer.concat([cipher.update(JSON.stringify(plaintext), "utf8"), cipher.final()])
      return { keyVersion: KEY_VERSION, sealed: Buffer.concat([nonce, cipher.getAuthTag(), body]) }
    }

    const open = <A>(sealed: Uint8Array, keyVersion: number, context: ReadonlyArray<string>): A => {
      const bytes = Buffer.from(sealed)
      try {
        const decipher = Crypto.createDecipheriv("aes-256-gcm", dataKey(keyVersion), bytes.subarray(0, NONCE_BYTES))
        decipher.setAAD(Buffer.from([...context, `v${keyVersion}`].join("\n")))
        decipher.setAuthTag(bytes.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES))
        const text = Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()])
        return JSON.parse(text.toString("utf8")) as A
      } catch {
        throw new VaultError("stored credentials cannot be decrypted: wrong SWITCHYARD_SECRET_KEY or tampered data")
      }
    }

    return { seal, open } as const
  })
}) {}
