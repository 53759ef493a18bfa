import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { atOnce, call } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createFunction } from "./support.js"

let node: TestNode
let admin: string
beforeAll(async () => {
  node = await startTestNode()
  admin = (await node.bootstrap()).api_key
})
afterAll(() => node?.stop())

describe("two PATCHes of a function at once", () => {
  it("both hold, each a version of its own: the later keeps the earlier's change", async () => {
    const fn = await createFunction(node, admin, "export default async () => 'one'", { description: "Before" })
    const [coded, described] = await atOnce(node, "functions", fn.id, [
      () => call(node, admin, "PATCH", `/v1/functions/${fn.id}`, { code: "export default async () => 'two'" }),
      () => call(node, admin, "PATCH", `/v1/functions/${fn.id}`, { description: "After" })
    ])
    expect([coded.status, described.status], JSON.stringify([coded.body, described.body])).toEqual([200, 200])
    expect([coded.body.version, described.body.version].sort()).toEqual([2, 3])
    const after = await call(node, admin, "GET", `/v1/functions/${fn.id}`)
    expect(after.body).toMatchObject({ version: 3, code: "export default async () => 'two'", description: "After" })
    const versions = await call(node, admin, "GET", `/v1/functions/${fn.id}/versions`)
    expect(versions.body.items.map((v: any) => v.version)).toEqual([3, 2, 1])
  })
})
