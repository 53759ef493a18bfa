import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, auditEvents, call, expectError, scriptedAgent } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const policy = {
  default_action: "deny",
  rules: [
    { pattern: "git push *", action: "require_approval" },
    { pattern: "git *", action: "allow" },
    { pattern: "rm *", action: "deny" }
  ]
}

const world = async () => {
  const org = await node.bootstrap()
  const admin = org.api_key
  const agent = (await call(node, admin, "POST", "/v1/agents", scriptedAgent("Coder"))).body
  expect((await call(node, admin, "PUT", `/v1/agents/${agent.id}/command-policy`, policy)).status).toBe(200)
  const check = (body: Record<string, unknown>, key = admin) =>
    call(node, key, "POST", `/v1/agents/${agent.id}/commands/check`, body)
  return { org, admin, agentId: agent.id as string, check }
}

const invoke = async (admin: string, agentId: string) => {
  const r = await call(node, admin, "POST", `/v1/agents/${agentId}/invoke`, {
    input: { text: "hi", user: { id: "u", email: "u@example.com" } }
  })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body.id as string
}

const thread = async (admin: string, taskId: string) => {
  const r = await call(node, admin, "GET", `/v1/tasks/${taskId}/thread`)
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body.events as Array<any>
}

describe("command checks are recorded", () => {
  it("without task_id, each decision is an audit record CHECK_COMMAND (a denial with outcome denied)", async () => {
    const { org, check, agentId } = await world()
    const allowed = await check({ command: "git status", cwd: "/src/app" })
    expect(allowed.body).toMatchObject({ decision: "allow", rule: "git *" })
    const denied = await check({ command: "git status; rm -rf /" })
    expect(denied.body).toMatchObject({ decision: "deny", rule: "rm *" })
    const records = (await auditEvents(node, org.organization_id)).filter((e: any) => e.action === "CHECK_COMMAND")
    expect(records.map((r: any) => [r.outcome, r.details.command, r.details.decision, r.details.rule])).toEqual([
      ["success", "git status", "allow", "git *"],
      ["denied", "git status; rm -rf /", "deny", "rm *"]
    ])
    expect(records[0].details.cwd).toBe("/src/app")
    expect(records[0].targets).toEqual([{ type: "agent", id: agentId, name: "Coder" }])
    expect(records[1].details.commands.map((c: any) => c.words.join(" "))).toEqual(["git status", "rm -rf /"])
  })

  it("with task_id, each decision is a command_check event in the task's thread, and no audit record", async () => {
    const { org, admin, agentId, check } = await world()
    const taskId = await invoke(admin, agentId)
    expect((await check({ command: "git log", task_id: taskId })).body.decision).toBe("allow")
    expect((await check({ command: "rm -rf /", task_id: taskId, cwd: "/w" })).body.decision).toBe("deny")
    const events = (await thread(admin, taskId)).filter((e) => e.type === "command_check")
    expect(events.map((e) => [e.data.command, e.data.decision, e.data.rule, e.data.cwd])).toEqual([
      ["git log", "allow", "git *", null],
      ["rm -rf /", "deny", "rm *", "/w"]
    ])
    expect(events[1].data.commands).toEqual([{ words: ["rm", "-rf", "/"], decision: "deny", rule: "rm *" }])
    const audit = (await auditEvents(node, org.organization_id)).filter((e: any) => e.action === "CHECK_COMMAND")
    expect(audit).toEqual([])
  })

  it("a task_id of another agent, or none at all, is not found", async () => {
    const { admin, check } = await world()
    const other = (await call(node, admin, "POST", "/v1/agents", scriptedAgent("Other"))).body
    const otherTask = await invoke(admin, other.id)
    expectError(await check({ command: "ls", task_id: otherTask }), 404, "not_found")
    expectError(await check({ command: "ls", task_id: "00000000-0000-4000-8000-000000000000" }), 404, "not_found")
  })
})

describe("a command that needs approval", () => {
  it("is pending with an approval in the inbox; approving it answers the runtime's long poll", async () => {
    const { admin, check, agentId } = await world()
    const member = await addMember(node, admin, "member")
    const pending = await check({ command: "git push origin main", cwd: "/repo" }, member.key)
    expect(pending.body).toMatchObject({ decision: "pending", rule: "git push *" })
    const approvalId = pending.body.approval_id as string
    expect(approvalId).toMatch(/^[0-9a-f-]{36}$/)

    const inbox = await call(node, admin, "GET", "/v1/approvals?status=pending")
    const listed = inbox.body.items.find((a: any) => a.id === approvalId)
    expect(listed).toMatchObject({
      kind: "command",
      task_id: null,
      agent_id: agentId,
      tool: "shell",
      status: "pending",
      arguments: { command: "git push origin main", cwd: "/repo" }
    })

    // no decision within the wait: still pending, after about the wait
    const started = Date.now()
    const early = await call(node, member.key, "GET", `/v1/approvals/${approvalId}?wait=1`)
    expect(early.body.status).toBe("pending")
    expect(Date.now() - started).toBeGreaterThanOrEqual(900)

    const waiting = call(node, member.key, "GET", `/v1/approvals/${approvalId}?wait=30`)
    await new Promise((r) => setTimeout(r, 300))
    const decidedAt = Date.now()
    const approved = await call(node, admin, "POST", `/v1/approvals/${approvalId}/approve`, { reason: "release" })
    expect(approved.status, JSON.stringify(approved.body)).toBe(200)
    const answered = await waiting
    expect(answered.body).toMatchObject({ id: approvalId, status: "approved", reason: "release" })
    expect(Date.now() - decidedAt).toBeLessThan(10_000)

    // decided once
    expectError(await call(node, admin, "POST", `/v1/approvals/${approvalId}/reject`, {}), 409, "approval_decided")
  })

  it("a rejection reaches the runtime too, and only Admins decide", async () => {
    const { admin, check } = await world()
    const builder = await addMember(node, admin, "builder")
    const pending = await check({ command: "git push --tags" })
    const approvalId = pending.body.approval_id as string
    expectError(await call(node, builder.key, "POST", `/v1/approvals/${approvalId}/approve`, {}), 403, "forbidden")
    const waiting = call(node, builder.key, "GET", `/v1/approvals/${approvalId}?wait=30`)
    await call(node, admin, "POST", `/v1/approvals/${approvalId}/reject`, { reason: "not today" })
    expect((await waiting).body).toMatchObject({ status: "rejected", reason: "not today" })
  })

  it("with task_id, the request names the task, and its decision lands in the thread; the task is not resumed", async () => {
    const { admin, agentId, check } = await world()
    const taskId = await invoke(admin, agentId)
    const before = (await call(node, admin, "GET", `/v1/tasks/${taskId}`)).body
    const pending = await check({ command: "git push origin main", task_id: taskId })
    expect(pending.body.decision).toBe("pending")
    const approval = (await call(node, admin, "GET", `/v1/approvals/${pending.body.approval_id}`)).body
    expect(approval).toMatchObject({ kind: "command", task_id: taskId, status: "pending" })
    await call(node, admin, "POST", `/v1/approvals/${pending.body.approval_id}/approve`, {})
    const events = await thread(admin, taskId)
    const checkEvent = events.find((e) => e.type === "command_check")
    expect(checkEvent.data).toMatchObject({ decision: "pending", approval_id: pending.body.approval_id })
    const decided = events.find((e) => e.type === "approval_decided")
    expect(decided.data).toMatchObject({ approval_id: pending.body.approval_id, status: "approved" })
    const after = (await call(node, admin, "GET", `/v1/tasks/${taskId}`)).body
    expect(after.status).toBe(before.status)
  })

  it("cancelling the task expires its pending command approval, and the waiting runtime hears it", async () => {
    const { admin, check } = await world()
    const slow = (await call(node, admin, "POST", "/v1/agents", {
      name: "Slow",
      model: { provider: "scripted", script: [{ text: "done", delay_ms: 60_000 }] }
    })).body
    const accepted = await call(node, admin, "POST", `/v1/agents/${slow.id}/invoke?asynchronous=true`, {
      input: { text: "hi", user: { id: "u", email: "u@example.com" } }
    })
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202)
    await call(node, admin, "PUT", `/v1/agents/${slow.id}/command-policy`, policy)
    const pending = await call(node, admin, "POST", `/v1/agents/${slow.id}/commands/check`, {
      command: "git push",
      task_id: accepted.body.id
    })
    expect(pending.body.decision).toBe("pending")
    const waiting = call(node, admin, "GET", `/v1/approvals/${pending.body.approval_id}?wait=30`)
    await new Promise((r) => setTimeout(r, 300))
    expect((await call(node, admin, "POST", `/v1/tasks/${accepted.body.id}/cancel`)).status).toBe(200)
    expect((await waiting).body).toMatchObject({ status: "expired", reason: "The task was cancelled." })
    // the other agent's checks are untouched
    expect((await check({ command: "git status" })).body.decision).toBe("allow")
  })

  it("?wait= out of range is a 400", async () => {
    const { admin, check } = await world()
    const pending = await check({ command: "git push" })
    expectError(
      await call(node, admin, "GET", `/v1/approvals/${pending.body.approval_id}?wait=61`),
      400,
      "validation_failed"
    )
    expectError(
      await call(node, admin, "GET", `/v1/approvals/${pending.body.approval_id}?wait=x`),
      400,
      "validation_failed"
    )
  })
})
