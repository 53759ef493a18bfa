import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, uniqueEmail } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

describe("members", () => {
  it("adding one new person twice at once makes one member and one 409, never a 500", async () => {
    const { api_key: adminKey } = await node.bootstrap()
    for (let round = 0; round < 5; round++) {
      const email = uniqueEmail("twice")
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => call(node, adminKey, "POST", "/v1/members", { email, role: "member" }))
      )
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409])
      const ids = new Set(answers.filter((a) => a.status === 201).map((a) => a.body.user.id))
      expect(ids.size).toBe(1)
    }
  })
})
