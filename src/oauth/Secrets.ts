import * as Crypto from "node:crypto"

/** A new unguessable secret (256 bits), for codes, tokens, session ids and cookies. */
export const randomSecret = (prefix = ""): string => prefix + Crypto.randomBytes(32).toString("base64url")

/** Only hashes of secrets are stored: a database leak hands out no usable credential. */
export const hashOf = (secret: string): Buffer => Crypto.hash("sha256", secret, "buffer")

export const sameSecret = (a: string, b: string): boolean => {
  const x = hashOf(a)
  const y = hashOf(b)
  return Crypto.timingSafeEqual(x, y)
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"

/**
 * Grant ids have the shape of API key ids (12 of [a-z0-9]): a call made with an OAuth token records its
 * grant where a REST call records its key, so the same audit columns serve both.
 */
export const newGrantId = (): string =>
  Array.from(Crypto.randomBytes(12), (b) => ALPHABET[b % ALPHABET.length]).join("")

/** PKCE S256 (RFC 7636): BASE64URL(SHA256(verifier)), compared in constant time. */
export const pkceMatches = (verifier: string, challenge: string): boolean => {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false
  const computed = Crypto.createHash("sha256").update(verifier).digest("base64url")
  return sameSecret(computed, challenge)
}
