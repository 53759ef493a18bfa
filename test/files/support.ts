import * as Crypto from "node:crypto"
import type { TestNode } from "../support/TestNode.js"

export const sha256 = (bytes: Uint8Array) => Crypto.createHash("sha256").update(bytes).digest("hex")

/** Bytes that differ at every position, so a misplaced slice shows. */
export const patterned = (size: number, seed = 1) => {
  const bytes = Buffer.alloc(size)
  let x = seed
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    bytes[i] = x >>> 24
  }
  return bytes
}

/** A raw upload: the body is the file. */
export const uploadRaw = (
  node: TestNode,
  apiKey: string,
  query: string,
  body: Uint8Array | string,
  contentType: string | undefined = "application/octet-stream"
) =>
  node.fetch(`/v1/files${query}`, {
    method: "POST",
    apiKey,
    headers: contentType === undefined ? {} : { "content-type": contentType },
    body: body as BodyInit
  })

export const uploaded = async (node: TestNode, apiKey: string, name: string, body: Uint8Array | string, extra = "") => {
  const response = await uploadRaw(node, apiKey, `?name=${encodeURIComponent(name)}${extra}`, body)
  if (response.status !== 201) throw new Error(`upload ${name}: ${response.status} ${await response.text()}`)
  return response.json()
}
