import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { patterned, sha256, uploadRaw } from "./support.js"

let node: TestNode
let admin: string
beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_MAX_FILE_BYTES: String(3 * 1024 * 1024) })
  admin = (await node.bootstrap()).api_key
})
afterAll(() => node?.stop())

describe("workspace files over REST", () => {
  it("a raw upload is stored in chunks and comes back whole, with its metadata", async () => {
    const bytes = patterned(2.5 * 1024 * 1024)
    const response = await uploadRaw(node, admin, "?name=data/blob.bin", bytes)
    const file = await response.json()
    expect(response.status, JSON.stringify(file)).toBe(201)
    expect(file).toMatchObject({
      name: "data/blob.bin",
      size: bytes.length,
      sha256: sha256(bytes),
      content_type: "application/octet-stream",
      scope: "organization",
      agent_id: null,
      owner: { type: "user" }
    })
    expect((await call(node, admin, "GET", `/v1/files/${file.id}`)).body).toEqual(file)
    const download = await node.fetch(`/v1/files/${file.id}/content`, { apiKey: admin })
    expect(download.status).toBe(200)
    expect(download.headers.get("etag")).toBe(`"${sha256(bytes)}"`)
    expect(download.headers.get("content-length")).toBe(String(bytes.length))
    expect(download.headers.get("accept-ranges")).toBe("bytes")
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true)
  })
})
