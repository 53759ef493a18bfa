import * as Crypto from "node:crypto"
import type { ApiKeyId } from "../../schema/Ids.js"

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
const KEY_PATTERN = /^sy_([a-z0-9]{12})_([A-Za-z0-9_-]{43})$/

/** A new key `sy_<id>_<secret>`: the id finds the row, only the secret's SHA-256 is stored. */
export const generateApiKey = () => {
  const bytes = Crypto.randomBytes(12)
  const id = Array.from(bytes, (b) => ALPHABET[b % ALPHABET.length]).join("") as ApiKeyId
  const secret = Crypto.randomBytes(32).toString("base64url")
  return { id, key: `sy_${id}_${secret}`, prefix: `sy_${id}_`, hash: hashSecret(secret) }
}

export const hashSecret = (secret: string): Buffer => Crypto.hash("sha256", secret, "buffer")

export const parseApiKey = (key: string): { readonly id: ApiKeyId; readonly secret: string } | undefined => {
  const match = KEY_PATTERN.exec(key)
  return match === null ? undefined : { id: match[1] as ApiKeyId, secret: match[2]! }
}

export const secretMatches = (secret: string, storedHash: Uint8Array): boolean => {
  const hash = hashSecret(secret)
  return storedHash.length === hash.length && Crypto.timingSafeEqual(hash, storedHash)
}
