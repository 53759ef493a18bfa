import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { atOnce, auditEvents, call, scriptedAgent, withDatabase } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const versionsOf = (agentId: string) =>
  withDatabase(node, async (db) =>
    (await db.query(
      "SELECT version, snapshot->>'name' AS name, snapshot->>'instructions' AS instructions FROM agent_versions " +
        "WHERE agent_id = $1 ORDER BY version",
      [agentId]
    )).rows)

describe("two PATCHes of an agent at once", () => {
  it("both hold, each a version of its own: none lost, none skipped or made twice", async () => {
    const org = await node.bootstrap()
    const agent = (await call(node, org.api_key, "POST", "/v1/agents", scriptedAgent("Before"))).body
    const [renamed, instructed] = await atOnce(node, "agents", agent.id, [
      () => call(node, org.api_key, "PATCH", `/v1/agents/${agent.id}`, { name: "After" }),
      () => call(node, org.api_key, "PATCH", `/v1/agents/${agent.id}`, { instructions: "Be brief." })
    ])
    expect([renamed.status, instructed.status]).toEqual([200, 200])
    const after = await call(node, org.api_key, "GET", `/v1/agents/${agent.id}`)
    expect(after.body).toMatchObject({ name: "After", instructions: "Be brief.", version: 3 })
    const versions = await versionsOf(agent.id)
    expect(versions.map((v) => v.version)).toEqual([1, 2, 3])
    expect(versions[2]).toMatchObject({ name: "After", instructions: "Be brief." })
    // each answered the agent as its own change left it
    expect([renamed.body.version, instructed.body.version].sort()).toEqual([2, 3])
  })
})

describe("a PATCH that changes nothing", () => {
  it("writes nothing and audits nothing: `{}` or the values the agent holds", async () => {
    const org = await node.bootstrap()
    const agent = (await call(node, org.api_key, "POST", "/v1/agents", {
      ...scriptedAgent("Same"),
      instructions: "Stay.",
      max_tokens: 1000
    })).body
    for (
      const body of [{}, { name: "Same", instructions: "Stay.", max_tokens: 1000 }, {
        model: { provider: "scripted", script: [{ text: "hello" }] }
      }]
    ) {
      const r = await call(node, org.api_key, "PATCH", `/v1/agents/${agent.id}`, body)
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(r.body).toMatchObject({ version: 1, updated_at: agent.updated_at, name: "Same" })
    }
    const after = await call(node, org.api_key, "GET", `/v1/agents/${agent.id}`)
    expect(after.body).toMatchObject({ version: 1, updated_at: agent.updated_at })
    const actions = (await auditEvents(node, org.organization_id)).map((e) => e.action)
    expect(actions).not.toContain("UPDATE_AGENT")
    // a real change is still one
    const changed = await call(node, org.api_key, "PATCH", `/v1/agents/${agent.id}`, { max_tokens: 2000 })
    expect(changed.body).toMatchObject({ version: 2, max_tokens: 2000 })
    const updates = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "UPDATE_AGENT")
    expect(updates.map((e) => e.details)).toEqual([{ changed: ["max_tokens"] }])
  })
})
