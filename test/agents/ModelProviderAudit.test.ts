import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { atOnce, auditEvents, call, withDatabase } from "../access/support.js"
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
    expect(events[0].details).toEqual({
      base_url: "https://llm.example.com/v1",
      api_key_set: true,
      api_key_changed: true,
      before: null
    })
    expect(JSON.stringify(events)).not.toContain("sk-secret-value")
  })

  it("a PUT of the settings held changes nothing: not written, not audited", async () => {
    const org = await node.bootstrap()
    const settings = { api_key: "sk-kept", base_url: "https://llm.example.com/v1" }
    const set = await call(node, org.api_key, "PUT", "/v1/model-providers/anthropic", settings)
    expect(set.status).toBe(200)
    const before = await auditEvents(node, org.organization_id)
    const again = await call(node, org.api_key, "PUT", "/v1/model-providers/anthropic", settings)
    expect(again.status).toBe(200)
    expect(again.body).toEqual(set.body)
    expect(await auditEvents(node, org.organization_id)).toEqual(before)
    // a new key alone is a change, recorded as one (never the key)
    const rotated = await call(node, org.api_key, "PUT", "/v1/model-providers/anthropic", {
      ...settings,
      api_key: "sk-new"
    })
    expect(rotated.status).toBe(200)
    const [last] = (await auditEvents(node, org.organization_id)).slice(-1)
    expect(last).toMatchObject({
      action: "UPDATE_MODEL_PROVIDER",
      details: {
        base_url: settings.base_url,
        api_key_set: true,
        api_key_changed: true,
        before: { base_url: settings.base_url, api_key_set: true }
      }
    })
    expect(JSON.stringify(last)).not.toContain("sk-")
  })

  it("PUTs at once apply one after the other, each recording the settings the other left as its before", async () => {
    const org = await node.bootstrap()
    const [first, second] = await atOnce(node, "organizations", org.organization_id, [
      () => call(node, org.api_key, "PUT", "/v1/model-providers/openai", { base_url: "https://one.example.com/v1" }),
      () => call(node, org.api_key, "PUT", "/v1/model-providers/openai", { base_url: "https://two.example.com/v1" })
    ])
    expect([first.status, second.status]).toEqual([200, 200])
    const events = (await auditEvents(node, org.organization_id)).filter((e: any) =>
      e.action === "UPDATE_MODEL_PROVIDER"
    )
    expect(events.map((e: any) => e.details)).toEqual([
      { base_url: "https://one.example.com/v1", api_key_set: false, api_key_changed: false, before: null },
      {
        base_url: "https://two.example.com/v1",
        api_key_set: false,
        api_key_changed: false,
        before: { base_url: "https://one.example.com/v1", api_key_set: false }
      }
    ])
  })

  it("a key that no longer opens is replaced by a PUT, not compared", async () => {
    const org = await node.bootstrap()
    expect((await call(node, org.api_key, "PUT", "/v1/model-providers/openai", { api_key: "sk-old" })).status).toBe(200)
    // as after a change of SWITCHYARD_SECRET_KEY: the sealed key cannot be opened
    await withDatabase(
      node,
      (db) =>
        db.query("UPDATE model_providers SET api_key = '\\x00'::bytea WHERE organization_id = $1", [
          org.organization_id
        ])
    )
    const replaced = await call(node, org.api_key, "PUT", "/v1/model-providers/openai", { api_key: "sk-new" })
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200)
    const [last] = (await auditEvents(node, org.organization_id)).slice(-1)
    expect(last.details).toMatchObject({ api_key_changed: true, before: { api_key_set: true } })
  })
})
