import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call, scriptedAgent } from "../access/support.js"
import { connectSdkClient, signedUpAdmin } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

describe("command MCP tools, through the SDK client", () => {
  it("check_command answers as the REST check does, and get_command_policy reads the policy", async () => {
    const admin = await signedUpAdmin(node)
    const agent = (await call(node, admin.api_key, "POST", "/v1/agents", scriptedAgent("Coder"))).body
    const policy = {
      default_action: "deny",
      rules: [{ pattern: "git push *", action: "require_approval" }, { pattern: "git *", action: "allow" }]
    }
    expect((await call(node, admin.api_key, "PUT", `/v1/agents/${agent.id}/command-policy`, policy)).status).toBe(200)
    const client = await connectSdkClient(node, admin.email, "commands")
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).toEqual(expect.arrayContaining(["check_command", "get_command_policy"]))

    const got = await client.callTool({ name: "get_command_policy", arguments: { agent_id: agent.id } })
    expect(got.structuredContent).toMatchObject({ agent_id: agent.id, ...policy, is_default: false })

    for (const command of ["git status | git log", "git status; rm -rf /", "ls ("]) {
      const viaMcp = await client.callTool({ name: "check_command", arguments: { agent_id: agent.id, command } })
      const viaRest = await call(node, admin.api_key, "POST", `/v1/agents/${agent.id}/commands/check`, { command })
      expect(viaMcp.isError).toBeFalsy()
      expect(viaMcp.structuredContent).toEqual(viaRest.body)
    }
    const pending = await client.callTool({
      name: "check_command",
      arguments: { agent_id: agent.id, command: "git push origin main" }
    })
    expect(pending.structuredContent).toMatchObject({ decision: "pending", rule: "git push *" })
    const approvalId = (pending.structuredContent as any).approval_id
    const approval = await call(node, admin.api_key, "GET", `/v1/approvals/${approvalId}`)
    expect(approval.body).toMatchObject({ kind: "command", status: "pending" })

    const bad = await client.callTool({ name: "check_command", arguments: { agent_id: agent.id, command: "" } })
    expect(bad.isError).toBe(true)

    const records = (await auditEvents(node, admin.organization_id)).filter((e: any) => e.action === "CHECK_COMMAND")
    expect(records.length).toBe(7)
    await client.close()
  })
})
