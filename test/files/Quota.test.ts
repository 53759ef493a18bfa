import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { patterned, uploadRaw } from "./support.js"

const QUOTA = 100_000

let node: TestNode
beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_ORG_FILE_QUOTA_BYTES: String(QUOTA) })
})
afterAll(() => node?.stop())

/** An upload whose length is not declared (chunked): the quota can only stop it while it streams. */
const uploadChunked = (apiKey: string, name: string, bytes: Uint8Array) =>
  node.fetch(`/v1/files?name=${name}`, {
    method: "POST",
    apiKey,
    headers: { "content-type": "application/octet-stream" },
    body: new ReadableStream({
      start(controller) {
        for (let at = 0; at < bytes.length; at += 8192) controller.enqueue(bytes.subarray(at, at + 8192))
        controller.close()
      }
    }),
    duplex: "half"
  } as RequestInit)

const namesOf = async (apiKey: string) =>
  ((await (await node.fetch("/v1/files?limit=200", { apiKey })).json()).items as Array<{ name: string; size: number }>)
    .map((f) => `${f.name}:${f.size}`).sort()

describe("an organization's storage quota (SWITCHYARD_ORG_FILE_QUOTA_BYTES)", () => {
  it("refuses a file that does not fit, declared or streamed, keeps nothing of it, and counts an overwrite's room", async () => {
    const { api_key: apiKey } = await node.bootstrap()
    expect((await uploadRaw(node, apiKey, "?name=a.bin", patterned(60_000))).status).toBe(201)

    const declared = await uploadRaw(node, apiKey, "?name=b.bin", patterned(50_000))
    expect(declared.status).toBe(413)
    const body = await declared.json()
    expect(body.error.code).toBe("storage_quota_exceeded")
    expect(body.error.message).toContain("storage quota of 100000 bytes (SWITCHYARD_ORG_FILE_QUOTA_BYTES)")
    expect(body.error.message).toContain("take 60000 bytes already")

    const streamed = await uploadChunked(apiKey, "c.bin", patterned(50_000))
    expect(streamed.status).toBe(413)
    expect((await streamed.json()).error.code).toBe("storage_quota_exceeded")
    expect(await namesOf(apiKey)).toEqual(["a.bin:60000"])

    // what fits still does, and an overwrite may use the room of the file it replaces
    expect((await uploadRaw(node, apiKey, "?name=d.bin", patterned(40_000))).status).toBe(201)
    expect((await uploadRaw(node, apiKey, "?name=a.bin&overwrite=true", patterned(60_000, 2))).status).toBe(201)
    const tooBig = await uploadRaw(node, apiKey, "?name=a.bin&overwrite=true", patterned(60_001, 3))
    expect(tooBig.status).toBe(413)
    // the refused overwrite left the file it would have replaced
    expect(await namesOf(apiKey)).toEqual(["a.bin:60000", "d.bin:40000"])

    // deleting makes room
    const files = (await (await node.fetch("/v1/files", { apiKey })).json()).items as Array<
      { id: string; name: string }
    >
    const d = files.find((f) => f.name === "d.bin")!
    expect((await node.fetch(`/v1/files/${d.id}`, { method: "DELETE", apiKey })).status).toBe(204)
    expect((await uploadChunked(apiKey, "e.bin", patterned(40_000))).status).toBe(201)
  })

  it("is each organization's own", async () => {
    const full = (await node.bootstrap()).api_key
    const other = (await node.bootstrap()).api_key
    expect((await uploadRaw(node, full, "?name=big.bin", patterned(QUOTA))).status).toBe(201)
    expect((await uploadRaw(node, full, "?name=one.bin", patterned(1))).status).toBe(413)
    expect((await uploadRaw(node, other, "?name=big.bin", patterned(QUOTA))).status).toBe(201)
  })

  it("holds under uploads at once: of three that each fit alone, two fit together and one is refused", async () => {
    const { api_key: apiKey } = await node.bootstrap()
    const answers = await Promise.all(
      [1, 2, 3].map((i) => uploadChunked(apiKey, `part-${i}.bin`, patterned(40_000, i)))
    )
    const statuses = answers.map((a) => a.status).sort()
    expect(statuses).toEqual([201, 201, 413])
    const refused = answers.find((a) => a.status === 413)!
    expect((await refused.json()).error.code).toBe("storage_quota_exceeded")
    expect((await namesOf(apiKey)).length).toBe(2)
  })

  it("a deletion frees its room at once, and the count stays exact under uploads, overwrites and deletions at once", async () => {
    const { api_key: apiKey } = await node.bootstrap()
    const full = await uploadRaw(node, apiKey, "?name=full.bin", patterned(QUOTA))
    expect(full.status).toBe(201)
    expect((await uploadRaw(node, apiKey, "?name=one.bin", patterned(1))).status).toBe(413)
    const { id } = await full.json()
    expect((await node.fetch(`/v1/files/${id}`, { method: "DELETE", apiKey })).status).toBe(204)
    expect((await uploadRaw(node, apiKey, "?name=again.bin", patterned(QUOTA, 2))).status).toBe(201)
    const again = (await (await node.fetch("/v1/files?prefix=again", { apiKey })).json()).items[0].id
    expect((await node.fetch(`/v1/files/${again}`, { method: "DELETE", apiKey })).status).toBe(204)

    // small files written, replaced and deleted at once
    const sizes = [1000, 2000, 3000, 4000, 5000, 6000]
    await Promise.all(sizes.map((size, i) => uploadRaw(node, apiKey, `?name=s${i}.bin`, patterned(size, i))))
    const listed = (await (await node.fetch("/v1/files?limit=200", { apiKey })).json()).items as Array<
      { id: string; name: string }
    >
    await Promise.all([
      ...listed.filter((_, i) => i % 2 === 0).map((f) => node.fetch(`/v1/files/${f.id}`, { method: "DELETE", apiKey })),
      ...listed.filter((_, i) => i % 2 === 1).map((f, i) =>
        uploadRaw(node, apiKey, `?name=${f.name}&overwrite=true`, patterned(500 * (i + 1), 9))
      ),
      uploadChunked(apiKey, "late.bin", patterned(7000, 7))
    ])
    const used = (await namesOf(apiKey)).reduce((n, f) => n + Number(f.split(":")[1]), 0)
    // exactly the room left fits, one byte more does not
    expect((await uploadRaw(node, apiKey, "?name=rest.bin", patterned(QUOTA - used + 1, 3))).status).toBe(413)
    expect((await uploadRaw(node, apiKey, "?name=rest.bin", patterned(QUOTA - used, 3))).status).toBe(201)
  })
})
