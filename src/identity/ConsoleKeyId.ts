import * as Crypto from "node:crypto"
import type { ApiKeyId } from "../../schema/Ids.js"

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"

/**
 * The key id a console session acts under: one stable id per user, in the shape of an API key id, so tasks,
 * audit records and "invoked by me" checks name the console like a key of that user. No API key has it.
 */
export const consoleKeyId = (userId: string): ApiKeyId =>
  Array.from(
    Crypto.hash("sha256", `console:${userId}`, "buffer").subarray(0, 12),
    (b) => ALPHABET[b % ALPHABET.length]
  ).join("") as ApiKeyId
