import * as Crypto from "node:crypto"

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a secret is `whsec_` and the base64 of its
 * key bytes; a signature is `v1,` and the base64 HMAC-SHA256, keyed with those bytes, of
 * `${webhook-id}.${webhook-timestamp}.${body}`. Several signatures go in one header, separated by spaces: a
 * receiver accepts the message when any of them verifies (so a rotated secret and its predecessor both work).
 */

const PREFIX = "whsec_"
/** 32 random bytes: above the specification's minimum of 24, the size of the HMAC's output. */
const KEY_BYTES = 32

/** A new secret, as shown to the client once. */
export const newSecret = (): string => PREFIX + Crypto.randomBytes(KEY_BYTES).toString("base64")

/** The key bytes of a secret this module made. */
export const secretKey = (secret: string): Buffer => Buffer.from(secret.slice(PREFIX.length), "base64")

/** The `webhook-signature` header: one `v1,` signature per key, the current first. */
export const signatureHeader = (
  keys: ReadonlyArray<Buffer>,
  id: string,
  timestamp: number,
  body: string
): string => {
  const signed = `${id}.${timestamp}.${body}`
  return keys.map((key) => "v1," + Crypto.createHmac("sha256", key).update(signed).digest("base64")).join(" ")
}
