import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, call, expectError, scriptedAgent } from "../access/support.js"
import { startTestNode } from "../support/TestNode.js"
import { publishedSkill, run, type SkillWorld, startSkillWorld, threadOf, toolAgent, waitStatus } from "./support.js"

/** An agent holding a skill whose `listPets` needs approval when `limit` is above 10. */
const guardedAgent = async (w: SkillWorld, limit: number) => {
  const agent = await toolAgent(w, w.admin, "listPets", { query_params: { limit } }, `lists ${limit}`)
  const skill = await publishedSkill(w, w.admin, {
    name: `guarded ${limit} ${Math.random()}`,
    visibility: "organization",
    actions: [{
      connection_id: w.connectionId,
      operation_id: "listPets",
      requires_approval: true,
      approval_condition: { argument: "query_params.limit", op: "gt", value: 10 }
    }]
  })
  const attached = await call(w.node, w.admin, "PUT", `/v1/agents/${agent.id}/skills/${skill.id}`)
  expect(attached.status).toBe(200)
  return { ...agent, skillId: skill.id as string }
}

const invokeAsync = async (w: SkillWorld, agentId: string) =>
  (await call(w.node, w.admin, "POST", `/v1/agents/${agentId}/invoke?asynchronous=true`, {
    input: { text: "list", user: { id: "u", email: "u@example.com" } }
  })).body

const listCalls = (w: SkillWorld, limit: number) =>
  w.target.requests.filter((r) => r.path === "/pets" && r.query.get("limit") === String(limit)).length

describe("approvals", () => {
  let w: SkillWorld
  beforeAll(async () => {
    w = await startSkillWorld()
  })
  afterAll(() => w?.stop())

  it("a call whose arguments do not meet the condition needs no approval", async () => {
    const agent = await guardedAgent(w, 5)
    const task = await run(w, w.admin, agent.id)
    expect(task.body.status).toBe("completed")
    expect(listCalls(w, 5)).toBe(1)
    expect((await call(w.node, w.admin, "GET", `/v1/approvals?task_id=${task.body.id}`)).body.items).toEqual([])
  })

  it("pauses the task until an admin approves, then makes the call", async () => {
    const agent = await guardedAgent(w, 50)
    const accepted = await invokeAsync(w, agent.id)
    const waiting = await waitStatus(w, accepted.id, ["waiting_approval"])
    expect(waiting.status).toBe("waiting_approval")
    expect(listCalls(w, 50)).toBe(0)
    const events = await threadOf(w, w.admin, accepted.id)
    const requested = events.find((e) => e.type === "approval_requested")
    expect(requested.data).toMatchObject({ name: "listPets", arguments: { query_params: { limit: 50 } } })
    const pending = (await call(w.node, w.admin, "GET", `/v1/approvals?status=pending&task_id=${accepted.id}`)).body
    expect(pending.items).toHaveLength(1)
    const approvalId = pending.items[0].id
    expect(approvalId).toBe(requested.data.approval_id)
    // a member may not decide
    expectError(await call(w.node, w.member.key, "POST", `/v1/approvals/${approvalId}/approve`, {}), 403, "forbidden")
    const approved = await call(w.node, w.admin, "POST", `/v1/approvals/${approvalId}/approve`, { reason: "fine" })
    expect(approved.body).toMatchObject({ status: "approved", reason: "fine" })
    const done = await waitStatus(w, accepted.id, ["completed", "error"])
    expect(done.status).toBe("completed")
    expect(listCalls(w, 50)).toBe(1)
    const types = (await threadOf(w, w.admin, accepted.id)).map((e) => e.type)
    expect(types).toEqual([
      "user_message",
      "model_call",
      "approval_requested",
      "approval_decided",
      "tool_call",
      "model_call",
      "agent_message"
    ])
    expectError(await call(w.node, w.admin, "POST", `/v1/approvals/${approvalId}/reject`, {}), 409, "approval_decided")
  })

  it("an agent's own skill reaching the same operation does not route around the attached skill's approval", async () => {
    const agent = await guardedAgent(w, 60)
    // the agent's builder also lists the operation among its own skills
    const own = await call(w.node, w.admin, "PATCH", `/v1/agents/${agent.id}`, {
      skills: [{ connection_id: w.connectionId, operation_ids: ["listPets"] }]
    })
    expect(own.status, JSON.stringify(own.body)).toBe(200)
    const accepted = await invokeAsync(w, agent.id)
    const waiting = await waitStatus(w, accepted.id, ["waiting_approval", "completed", "error"])
    expect(waiting.status).toBe("waiting_approval")
    expect(listCalls(w, 60)).toBe(0)
    const cancelled = await call(w.node, w.admin, "POST", `/v1/tasks/${accepted.id}/cancel`)
    expect(cancelled.status).toBe(200)
  })

  it("deleting the agent cancels its task waiting for approval and withdraws the request", async () => {
    const agent = await guardedAgent(w, 70)
    const accepted = await invokeAsync(w, agent.id)
    expect((await waitStatus(w, accepted.id, ["waiting_approval"])).status).toBe("waiting_approval")
    const approvalId = (await call(w.node, w.admin, "GET", `/v1/approvals?task_id=${accepted.id}`)).body.items[0].id
    expect((await call(w.node, w.admin, "DELETE", `/v1/agents/${agent.id}`)).status).toBe(204)
    const task = (await call(w.node, w.admin, "GET", `/v1/tasks/${accepted.id}`)).body
    expect(task).toMatchObject({ status: "cancelled", result: "Cancelled: its agent was deleted." })
    expectError(await call(w.node, w.admin, "POST", `/v1/approvals/${approvalId}/approve`, {}), 409, "approval_decided")
    expect(listCalls(w, 70)).toBe(0)
  })

  it("a key limited to other agents does not find the approval; one limited to its agent does", async () => {
    const agent = await guardedAgent(w, 55)
    const accepted = await invokeAsync(w, agent.id)
    await waitStatus(w, accepted.id, ["waiting_approval"])
    const [pending] = (await call(w.node, w.admin, "GET", `/v1/approvals?task_id=${accepted.id}`)).body.items
    const other = (await call(w.node, w.admin, "POST", "/v1/agents", scriptedAgent("Elsewhere"))).body
    const limitedTo = async (agentId: string) => {
      const group = await call(w.node, w.admin, "POST", "/v1/groups", { name: `g ${agentId}`, agent_ids: [agentId] })
      const person = await addMember(w.node, w.admin, "member")
      await call(w.node, w.admin, "POST", `/v1/groups/${group.body.id}/members`, { user_id: person.userId })
      return person.key
    }
    expectError(await call(w.node, await limitedTo(other.id), "GET", `/v1/approvals/${pending.id}`), 404, "not_found")
    const own = await call(w.node, await limitedTo(agent.id), "GET", `/v1/approvals/${pending.id}`)
    expect(own.status).toBe(200)
    expect(own.body.id).toBe(pending.id)
    // an Admin's organization key limited to agents lists their requests only, over REST and MCP alike
    const adminKeyFor = async (agentId: string) =>
      (await call(w.node, w.admin, "POST", "/v1/api-keys", {
        name: `approvals of ${agentId}`,
        kind: "organization",
        role: "admin",
        agent_ids: [agentId]
      })).body.api_key as string
    const elsewhere = await adminKeyFor(other.id)
    expect((await call(w.node, elsewhere, "GET", "/v1/approvals")).body).toEqual({ items: [], next_cursor: null })
    expect((await call(w.node, elsewhere, "GET", `/v1/approvals?task_id=${accepted.id}`)).body.items).toEqual([])
    const listed = (await call(w.node, await adminKeyFor(agent.id), "GET", "/v1/approvals?status=pending")).body
    expect(listed.items.map((a: any) => a.agent_id)).toEqual(listed.items.map(() => agent.id))
    expect(listed.items.map((a: any) => a.id)).toContain(pending.id)
    // the body, a reason, may be left out
    const rejected = await call(w.node, w.admin, "POST", `/v1/approvals/${pending.id}/reject`)
    expect(rejected.body).toMatchObject({ status: "rejected", reason: null })
  })

  it("a rejection is reported to the model and recorded; the call is never made", async () => {
    const agent = await guardedAgent(w, 60)
    const accepted = await invokeAsync(w, agent.id)
    await waitStatus(w, accepted.id, ["waiting_approval"])
    const [pending] = (await call(w.node, w.admin, "GET", `/v1/approvals?task_id=${accepted.id}`)).body.items
    await call(w.node, w.admin, "POST", `/v1/approvals/${pending.id}/reject`, { reason: "too many" })
    const done = await waitStatus(w, accepted.id, ["completed", "error"])
    expect(done.status).toBe("completed")
    expect(done.result).toContain("rejected by a reviewer: too many")
    expect(listCalls(w, 60)).toBe(0)
    const toolCall = (await threadOf(w, w.admin, accepted.id)).find((e) => e.type === "tool_call")
    expect(toolCall.data.outcome).toBe("rejected")
  })

  it("a rejection reaches the model even when the agent lost the skill while the call waited", async () => {
    const agent = await guardedAgent(w, 60)
    const accepted = await invokeAsync(w, agent.id)
    await waitStatus(w, accepted.id, ["waiting_approval"])
    expect((await call(w.node, w.admin, "DELETE", `/v1/agents/${agent.id}/skills/${agent.skillId}`)).status).toBe(204)
    const [pending] = (await call(w.node, w.admin, "GET", `/v1/approvals?task_id=${accepted.id}`)).body.items
    const rejected = await call(w.node, w.admin, "POST", `/v1/approvals/${pending.id}/reject`, { reason: "too many" })
    expect(rejected.status).toBe(200)
    const done = await waitStatus(w, accepted.id, ["completed", "error"])
    expect(done.status).toBe("completed")
    expect(done.result).toContain("rejected by a reviewer: too many")
    expect(listCalls(w, 60)).toBe(0)
  })

  it("a decision racing a cancel either wins, or is told the task was cancelled", async () => {
    const agent = await guardedAgent(w, 71)
    // each way round: they once deadlocked (the cancel locked the task, then the request; the decision the other way)
    for (let i = 0; i < 10; i++) {
      const accepted = await invokeAsync(w, agent.id)
      await waitStatus(w, accepted.id, ["waiting_approval"])
      const [request] = (await call(w.node, w.admin, "GET", `/v1/approvals?task_id=${accepted.id}`)).body.items
      const [decided, cancelled] = await Promise.all([
        call(w.node, w.admin, "POST", `/v1/approvals/${request.id}/approve`, {}),
        call(w.node, w.admin, "POST", `/v1/tasks/${accepted.id}/cancel`)
      ])
      if (decided.status === 200) {
        expect(decided.body.status).toBe("approved")
        // the approved run may even have ended before the cancel came
        expect(cancelled.status === 200 ? cancelled.body.status : cancelled.body.error.code)
          .toBe(cancelled.status === 200 ? "cancelled" : "task_ended")
      } else {
        expect(cancelled.body.status).toBe("cancelled")
        expectError(decided, 409, "approval_decided")
        expect(decided.body.error.message).toBe(
          "This request expired (The task was cancelled): it can no longer be decided."
        )
      }
    }
  })

  it("cancelling a waiting task withdraws its request", async () => {
    const agent = await guardedAgent(w, 70)
    const accepted = await invokeAsync(w, agent.id)
    await waitStatus(w, accepted.id, ["waiting_approval"])
    const cancelled = await call(w.node, w.admin, "POST", `/v1/tasks/${accepted.id}/cancel`)
    expect(cancelled.body.status).toBe("cancelled")
    const [request] = (await call(w.node, w.admin, "GET", `/v1/approvals?task_id=${accepted.id}`)).body.items
    expect(request.status).toBe("expired")
    // deciding it now says why it cannot be, in words that read
    const late = await call(w.node, w.admin, "POST", `/v1/approvals/${request.id}/approve`, {})
    expectError(late, 409, "approval_decided")
    expect(late.body.error.message).toBe(
      "This request expired (The task was cancelled): it can no longer be decided."
    )
  })
})

describe("approvals over time and restarts", () => {
  it("an unanswered request expires after SWITCHYARD_APPROVAL_TIMEOUT and ends the task in error", async () => {
    const w = await startSkillWorld({
      SWITCHYARD_APPROVAL_TIMEOUT: "1 second",
      SWITCHYARD_TASK_SWEEP_INTERVAL: "300 millis"
    })
    try {
      const agent = await guardedAgent(w, 80)
      const accepted = await invokeAsync(w, agent.id)
      const done = await waitStatus(w, accepted.id, ["completed", "error"])
      expect(done.status).toBe("error")
      expect(done.result).toContain("needed approval, and none was given")
      expect(done.error_code).toBe("approval_expired")
      expect(listCalls(w, 80)).toBe(0)
    } finally {
      await w.stop()
    }
  })

  it("a request expires and ends the task in error even when the agent lost the skill while it waited", async () => {
    const w = await startSkillWorld({
      SWITCHYARD_APPROVAL_TIMEOUT: "2 seconds",
      SWITCHYARD_TASK_SWEEP_INTERVAL: "300 millis"
    })
    try {
      const agent = await guardedAgent(w, 81)
      const accepted = await invokeAsync(w, agent.id)
      await waitStatus(w, accepted.id, ["waiting_approval"])
      const detached = await call(w.node, w.admin, "DELETE", `/v1/agents/${agent.id}/skills/${agent.skillId}`)
      expect(detached.status).toBe(204)
      const done = await waitStatus(w, accepted.id, ["completed", "error"])
      expect(done.status).toBe("error")
      expect(done.result).toContain("needed approval, and none was given")
      expect(listCalls(w, 81)).toBe(0)
    } finally {
      await w.stop()
    }
  })

  it("a task waiting for approval survives its node: another node on the database takes the decision", async () => {
    const w = await startSkillWorld()
    let second: Awaited<ReturnType<typeof startTestNode>> | undefined
    try {
      const agent = await guardedAgent(w, 90)
      const accepted = await invokeAsync(w, agent.id)
      await waitStatus(w, accepted.id, ["waiting_approval"])
      await w.node.stop()
      second = await startTestNode({ DATABASE_URL: w.node.databaseUrl, SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
      const on2 = { ...w, node: second }
      const [pending] = (await call(second, w.admin, "GET", `/v1/approvals?task_id=${accepted.id}`)).body.items
      expect(pending.status).toBe("pending")
      await call(second, w.admin, "POST", `/v1/approvals/${pending.id}/approve`, {})
      const done = await waitStatus(on2, accepted.id, ["completed", "error"])
      expect(done.status).toBe("completed")
      expect(listCalls(w, 90)).toBe(1)
    } finally {
      await second?.stop()
      await w.target.close()
    }
  })
})
