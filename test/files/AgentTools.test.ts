import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call } from "../access/support.js"
import { createAgent, invokeAgent } from "../agents/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { patterned, uploaded } from "./support.js"

let node: TestNode
let admin: string
let organizationId: string
beforeAll(async () => {
  node = await startTestNode()
  const org = await node.bootstrap()
  admin = org.api_key
  organizationId = org.organization_id
})
afterAll(() => node?.stop())

const scripted = (name: string, script: Array<Record<string, unknown>>) =>
  createAgent(node, admin, { name, model: { provider: "scripted", script } })

const run = async (agentId: string) => {
  const response = await invokeAgent(node, admin, agentId, "go")
  const task = await response.json()
  expect(task.status, JSON.stringify(task)).toBe("completed")
  const thread = (await call(node, admin, "GET", `/v1/tasks/${task.id}/thread`)).body
  const results = thread.events.filter((e: any) => e.type === "tool_call").map((e: any) => e.data)
  return { task, results }
}

describe("an agent's built-in workspace tools", () => {
  it("write_file, read_file and list_files work on the agent's own workspace and the organization's files", async () => {
    await uploaded(node, admin, "shared/brief.txt", "The brief: be short.")
    await uploaded(node, admin, "shared/logo.png", patterned(2000))
    const agent = await scripted("Writer", [
      { tool_calls: [{ name: "read_file", arguments: { name: "shared/brief.txt" } }] },
      { tool_calls: [{ name: "write_file", arguments: { name: "out/summary.md", text: "# Short\n" } }] },
      { tool_calls: [{ name: "read_file", arguments: { name: "shared/logo.png" } }] },
      { tool_calls: [{ name: "list_files", arguments: {} }] },
      { text: "files: {{last_tool_result}}" }
    ])
    const { results, task } = await run(agent.id)
    expect(results.map((r: any) => [r.name, r.outcome])).toEqual([
      ["read_file", "ok"],
      ["write_file", "ok"],
      ["read_file", "error"],
      ["list_files", "ok"]
    ])
    expect(results[0].result).toBe("The brief: be short.")
    expect(results[1].result).toMatch(/^wrote out\/summary\.md \(8 bytes, id [0-9a-f-]{36}\)$/)
    expect(results[2].result).toContain("binary")
    const listed = JSON.parse(task.result.slice("files: ".length))
    expect(listed.files.map((f: any) => [f.name, f.scope])).toEqual([
      ["out/summary.md", "agent"],
      ["shared/brief.txt", "organization"],
      ["shared/logo.png", "organization"]
    ])

    // over REST: the file is in the agent's workspace, written by the agent, and audited with the task
    const files = (await call(node, admin, "GET", `/v1/files?agent_id=${agent.id}`)).body.items
    expect(files).toHaveLength(1)
    expect(files[0]).toMatchObject({
      name: "out/summary.md",
      scope: "agent",
      agent_id: agent.id,
      owner: { type: "agent", id: agent.id },
      content_type: "text/markdown; charset=utf-8"
    })
    const record = (await auditEvents(node, organizationId)).find((e: any) =>
      e.action === "CREATE_FILE" && e.targets[0].id === files[0].id
    )
    expect(record).toMatchObject({ actor_type: "system", actor_id: `agent:${agent.id}`, details: { task_id: task.id } })
  })

  it("one agent's workspace is not another's; a second write replaces the first; bad arguments are errors", async () => {
    const first = await scripted("First", [
      { tool_calls: [{ name: "write_file", arguments: { name: "private.txt", text: "first's secret" } }] },
      { tool_calls: [{ name: "write_file", arguments: { name: "private.txt", text: "first's second secret" } }] },
      { text: "done" }
    ])
    await run(first.id)
    const second = await scripted("Second", [
      { tool_calls: [{ name: "read_file", arguments: { name: "private.txt" } }] },
      { tool_calls: [{ name: "write_file", arguments: { name: "../escape.txt", text: "x" } }] },
      { tool_calls: [{ name: "read_file", arguments: { path: "private.txt" } }] },
      { tool_calls: [{ name: "list_files", arguments: { prefix: "private" } }] },
      { text: "{{last_tool_result}}" }
    ])
    const { results, task } = await run(second.id)
    expect(results.map((r: any) => r.outcome)).toEqual(["error", "error", "error", "ok"])
    expect(results[0].result).toContain("not found")
    expect(results[1].result).toContain("invalid arguments")
    expect(JSON.parse(task.result).files).toEqual([])
    const own = (await call(node, admin, "GET", `/v1/files?agent_id=${first.id}`)).body.items
    expect(own).toHaveLength(1)
    expect((await call(node, admin, "GET", `/v1/files/${own[0].id}/content`)).body).toBe("first's second secret")
  })
})
