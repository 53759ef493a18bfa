import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, call, scriptedAgent, withDatabase } from "../access/support.js"
import { connectSdkClient, setPassword, signedUpAdmin } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { foldedByNode } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const connect = (email: string) => connectSdkClient(node, email, "usage")

describe("get_usage, through the SDK client", () => {
  it("answers as GET /v1/usage does, with the same filters, roles and errors", async () => {
    const admin = await signedUpAdmin(node)
    const agent = (await call(node, admin.api_key, "POST", "/v1/agents", scriptedAgent("usage"))).body
    const member = await addMember(node, admin.api_key, "member")
    await setPassword(node, member.email, "correct horse battery staple")
    for (const user of [{ id: "carol", email: "carol@example.com" }, { id: member.userId, email: member.email }]) {
      const r = await call(node, admin.api_key, "POST", `/v1/agents/${agent.id}/invoke`, {
        input: { text: "hi", user }
      })
      expect(r.status).toBe(200)
    }
    await withDatabase(node, (db) => foldedByNode(db))
    const client = await connect(admin.email)
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("get_usage")
    const args = { group_by: "user", bucket: "month" }
    const result = await client.callTool({ name: "get_usage", arguments: args })
    expect(result.isError).toBeFalsy()
    const rest = await call(node, admin.api_key, "GET", "/v1/usage?group_by=user&bucket=month")
    const report = result.structuredContent as any
    expect({ ...report, to: undefined }).toEqual({ ...rest.body, to: undefined })
    expect(report.rows.map((r: any) => r.user_id).sort()).toEqual(["carol", member.userId].sort())

    const bad = await client.callTool({ name: "get_usage", arguments: { group_by: "planet" } })
    expect(bad.isError).toBe(true)
    expect(JSON.stringify(bad.content)).toContain("invalid_group_by")

    // a Member's client sees only their own
    const mine = await connect(member.email)
    const own = (await mine.callTool({ name: "get_usage", arguments: args })).structuredContent as any
    expect(own.rows.map((r: any) => r.user_id)).toEqual([member.userId])
    const other = await mine.callTool({ name: "get_usage", arguments: { user_id: "carol" } })
    expect(other.isError).toBe(true)
    expect(JSON.stringify(other.content)).toContain("forbidden")
    await mine.close()
    await client.close()
  })
})
