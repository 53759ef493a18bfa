import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

describe("model provider settings", () => {
  it("are audited when set and removed, without the key", async () => {
    const org = await node.bootstrap()
    const set = await call(node, org.api_key, "PUT", "/v1/model-providers/openai", {
      api_key: "sk-secret-value",
      base_url: "https://llm.example.com/v1"
    })
    expect(set.status).toBe(200)
    expect((await call(node, org.api_key, "DELETE", "/v1/model-providers/openai")).status).toBe(204)
    const events = (await auditEvents(node, org.organization_id)).filter((e: any) =>
      e.action.includes("MODEL_PROVIDER")
    )
    expect(events.map((e: any) => e.action)).toEqual(["UPDATE_MODEL_PROVIDER", "DELETE_MODEL_PROVIDER"])
    expect(events[0].details).toEqual({ base_url: "https://llm.example.com/v1", api_key_set: true })
    expect(JSON.stringify(events)).not.toContain("sk-secret-value")
  })
})
