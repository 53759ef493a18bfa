import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { atOnce, auditEvents, call } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createBase } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

describe("changes of a knowledge base", () => {
  it("two PATCHes at once both hold: neither is lost to the other", async () => {
    const org = await node.bootstrap()
    const base = await createBase(node, org.api_key, { name: "Before", language: "english" })
    const [renamed, relanguaged] = await atOnce(node, "knowledge_bases", base.id, [
      () => call(node, org.api_key, "PATCH", `/v1/knowledge-bases/${base.id}`, { name: "After" }),
      () => call(node, org.api_key, "PATCH", `/v1/knowledge-bases/${base.id}`, { language: "simple" })
    ])
    expect([renamed.status, relanguaged.status]).toEqual([200, 200])
    const after = await call(node, org.api_key, "GET", `/v1/knowledge-bases/${base.id}`)
    expect(after.body).toMatchObject({ name: "After", language: "simple" })
  })

  it("a PATCH that changes nothing writes nothing and audits nothing", async () => {
    const org = await node.bootstrap()
    const base = await createBase(node, org.api_key, { name: "Same", description: "Kept", language: "simple" })
    for (const body of [{}, { name: "Same", description: "Kept", language: "simple" }]) {
      const r = await call(node, org.api_key, "PATCH", `/v1/knowledge-bases/${base.id}`, body)
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(r.body).toEqual(base)
    }
    const actions = (await auditEvents(node, org.organization_id)).map((e) => e.action)
    expect(actions).not.toContain("UPDATE_KNOWLEDGE_BASE")
  })
})
