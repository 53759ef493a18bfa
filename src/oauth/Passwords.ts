import * as Crypto from "node:crypto"
import { promisify } from "node:util"

const scrypt = promisify(Crypto.scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: Crypto.ScryptOptions
) => Promise<Buffer>

// OWASP's scrypt floor (N=2^17, r=8, p=1) costs ~128 MiB per hash; N=2^15 keeps a sign-in near 50 ms
// and 32 MiB on a small node, still far beyond what makes offline guessing cheap
const PARAMS = { N: 32768, r: 8, p: 1 }
const KEY_LENGTH = 32
const maxmem = 64 * 1024 * 1024

export const MIN_PASSWORD_LENGTH = 8

/** `scrypt$N$r$p$salt$hash`, parameters stored so they can be raised later without breaking old hashes. */
export const hashPassword = async (password: string): Promise<string> => {
  const salt = Crypto.randomBytes(16)
  const key = await scrypt(password.normalize("NFC"), salt, KEY_LENGTH, { ...PARAMS, maxmem })
  return ["scrypt", PARAMS.N, PARAMS.r, PARAMS.p, salt.toString("base64url"), key.toString("base64url")].join("$")
}

export const verifyPassword = async (password: string, stored: string): Promise<boolean> => {
  const [scheme, n, r, p, salt, hash] = stored.split("$")
  if (scheme !== "scrypt" || salt === undefined || hash === undefined) return false
  const expected = Buffer.from(hash, "base64url")
  const key = await scrypt(password.normalize("NFC"), Buffer.from(salt, "base64url"), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem
  })
  return Crypto.timingSafeEqual(key, expected)
}

// a sign-in for an unknown e-mail costs as much as one for a known one: no user enumeration by timing
let decoy: Promise<string> | undefined
export const decoyHash = () => (decoy ??= hashPassword(Crypto.randomBytes(16).toString("hex")))
