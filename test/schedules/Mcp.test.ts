import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember } from "../access/support.js"
import { connectSdkClient, setPassword, signedUpAdmin } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createScriptedAgent, user } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const connect = (email: string) => connectSdkClient(node, email, "schedules")

describe("schedule MCP tools, through the SDK client", () => {
  it("list, create, update, trigger and delete a schedule as the REST API does", async () => {
    const admin = await signedUpAdmin(node)
    const agentId = await createScriptedAgent(node, admin.api_key)
    const client = await connect(admin.email)
    const names = (await client.listTools()).tools.map((t) => t.name)
    for (
      const name of ["list_schedules", "create_schedule", "update_schedule", "delete_schedule", "trigger_schedule"]
    ) {
      expect(names).toContain(name)
    }
    const created = await client.callTool({
      name: "create_schedule",
      arguments: {
        name: "weekly",
        agent_id: agentId,
        cron: "@weekly",
        timezone: "America/New_York",
        input: { text: "go", user }
      }
    })
    expect(created.isError).toBeFalsy()
    const schedule = created.structuredContent as any
    expect(schedule).toMatchObject({ cron: "@weekly", timezone: "America/New_York", enabled: true })
    expect(schedule.next_runs).toHaveLength(5)
    expect(schedule.next_runs[0].local).toMatch(/T00:00:00\.000-0[45]:00$/)

    const listed = await client.callTool({ name: "list_schedules", arguments: { agent_id: agentId } })
    expect((listed.structuredContent as any).items.map((s: any) => s.id)).toEqual([schedule.id])

    const updated = await client.callTool({
      name: "update_schedule",
      arguments: { schedule_id: schedule.id, every: "2h", enabled: false }
    })
    expect(updated.structuredContent).toMatchObject({ cron: null, every: "2h", enabled: false, next_runs: [] })

    const bad = await client.callTool({
      name: "update_schedule",
      arguments: { schedule_id: schedule.id, cron: "nope" }
    })
    expect(bad.isError).toBe(true)
    expect(bad.structuredContent).toMatchObject({ error: { code: "invalid_cron" } })

    const triggered = await client.callTool({ name: "trigger_schedule", arguments: { schedule_id: schedule.id } })
    expect(triggered.structuredContent).toMatchObject({ source: "schedule", schedule_id: schedule.id })

    const deleted = await client.callTool({ name: "delete_schedule", arguments: { schedule_id: schedule.id } })
    expect(deleted.structuredContent).toEqual({ schedule_id: schedule.id, deleted: true })
    const gone = await client.callTool({ name: "delete_schedule", arguments: { schedule_id: schedule.id } })
    expect(gone.structuredContent).toMatchObject({ error: { code: "not_found" } })
    await client.close()
  })

  it("a Member may list schedules but not create one", async () => {
    const admin = await signedUpAdmin(node)
    const agentId = await createScriptedAgent(node, admin.api_key)
    const member = await addMember(node, admin.api_key, "member")
    await setPassword(node, member.email, "correct horse battery staple")
    const client = await connect(member.email)
    expect((await client.callTool({ name: "list_schedules", arguments: {} })).structuredContent).toEqual({
      items: [],
      total: 0,
      next_cursor: null
    })
    const refused = await client.callTool({
      name: "create_schedule",
      arguments: { name: "x", agent_id: agentId, every: "1h", input: { text: "go", user } }
    })
    expect(refused.isError).toBe(true)
    expect(refused.structuredContent).toMatchObject({ error: { code: "forbidden" } })
    await client.close()
  })
})
