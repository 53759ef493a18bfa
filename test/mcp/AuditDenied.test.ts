import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, auditEvents } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { mcpPost, obtainTokens, openSession, PASSWORD, setPassword, signedUpAdmin } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const callTool = async (token: string, session: string, name: string, args: unknown) =>
  mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name, arguments: args } }, {
    authorization: `Bearer ${token}`,
    "mcp-session-id": session,
    "mcp-protocol-version": "2025-11-25"
  })

describe("refusals on the MCP endpoint", () => {
  it("are written to the audit log as ACCESS_DENIED, like refusals over REST", async () => {
    const admin = await signedUpAdmin(node)
    // a token without mcp:write calls a tool that changes things
    const readOnly = (await obtainTokens(node, admin.email, { scope: "mcp:read" })).tokens.access_token
    const session = await openSession(node.baseUrl, readOnly)
    const scoped = await callTool(readOnly, session, "cancel_task", { task_id: crypto.randomUUID() })
    expect(scoped.status).toBe(403)
    // a Member calls a tool only Admins may use: the tool answers with an error, and it is recorded too
    const member = await addMember(node, admin.api_key, "member")
    await setPassword(node, member.email, PASSWORD)
    const memberToken = (await obtainTokens(node, member.email)).tokens.access_token
    const memberSession = await openSession(node.baseUrl, memberToken)
    const refused = await (await callTool(memberToken, memberSession, "list_approvals", {})).json()
    expect(refused.result.isError).toBe(true)
    expect(JSON.stringify(refused.result.structuredContent ?? refused.result.content)).toContain("forbidden")

    const denied = (await auditEvents(node, admin.organization_id)).filter((e: any) => e.action === "ACCESS_DENIED")
    expect(denied.map((e: any) => [e.outcome, e.targets[0].id, e.actor_id])).toEqual([
      ["denied", "cancel_task", admin.user_id],
      ["denied", "list_approvals", member.userId]
    ])
    expect(denied[0].details.reason).toBe("insufficient_scope")
  })
})
