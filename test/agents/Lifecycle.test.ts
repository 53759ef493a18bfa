import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call, expectError, pageThrough, scriptedAgent, withDatabase } from "../access/support.js"
import { json } from "../connectors/support.js"
import { createSchedule, createScriptedAgent, ticksOf } from "../schedules/support.js"
import type { TargetServer } from "../support/TargetServer.js"
import type { TestNode } from "../support/TestNode.js"
import { createAgent, invokeAgent, startPetWorld, waitForTask } from "./support.js"

let node: TestNode
let target: TargetServer
let apiKey: string
let connection: any

let world: Awaited<ReturnType<typeof startPetWorld>>
beforeAll(async () => {
  world = await startPetWorld({
    // $0.0001 per token: a budget is used up after a few calls (a call's request carries the workspace
    // tools' descriptions, ~1,000 tokens of worst-case estimate)
    SWITCHYARD_MODEL_PRICES: JSON.stringify({ scripted: { input: 100, output: 100 } })
  })
  ;({ apiKey, connection, node, target } = world)
})
afterAll(() => world?.stop())

const cancel = (taskId: string) => node.fetch(`/v1/tasks/${taskId}/cancel`, { method: "POST", apiKey })
const thread = async (taskId: string) =>
  (await (await node.fetch(`/v1/tasks/${taskId}/thread`, { apiKey })).json()).events

describe("cancellation", () => {
  it("interrupts a model call in flight", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "slow model",
      model: { provider: "scripted", script: [{ text: "late", delay_ms: 20_000 }] }
    })
    const accepted = await (await invokeAgent(node, apiKey, agent.id, "?", { async: true })).json()
    await new Promise((r) => setTimeout(r, 300))
    const started = Date.now()
    const response = await cancel(accepted.id)
    expect(response.status).toBe(200)
    expect((await response.json()).status).toBe("cancelled")
    const task = await waitForTask(node, apiKey, accepted.id)
    expect(task.status).toBe("cancelled")
    expect(Date.now() - started).toBeLessThan(5_000)
    const events = await thread(accepted.id)
    expect(events.map((e: any) => e.type)).toEqual(["user_message", "cancelled"])
  })

  it("interrupts a tool call in flight and keeps what was done", async () => {
    let aborted = false
    target.reply = (req, res) => {
      if (req.path === "/pets/slow") res.on("close", () => (aborted = true))
      else (async () => (await import("../support/TargetServer.js")).echo(req, res))()
    }
    try {
      const agent = await createAgent(node, apiKey, {
        name: "slow tool",
        model: {
          provider: "scripted",
          script: [
            { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "fast" } } }] },
            { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "slow" } } }] },
            { text: "never" }
          ]
        },
        skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
      })
      const accepted = await (await invokeAgent(node, apiKey, agent.id, "?", { async: true })).json()
      const deadline = Date.now() + 10_000
      while (!target.requests.some((r) => r.path === "/pets/slow") && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20))
      }
      await cancel(accepted.id)
      const task = await waitForTask(node, apiKey, accepted.id)
      expect(task.status).toBe("cancelled")
      await new Promise((r) => setTimeout(r, 200))
      expect(aborted).toBe(true)
      const types = (await thread(accepted.id)).map((e: any) => e.type)
      expect(types).toEqual(["user_message", "model_call", "tool_call", "model_call", "cancelled"])
    } finally {
      target.reply = (await import("../support/TargetServer.js")).echo
    }
  })

  it("cancelling an ended task is a 409 that says how it ended, and changes nothing", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "quick",
      model: { provider: "scripted", script: [{ text: "done" }] }
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "?")).json()
    const late = await cancel(task.id)
    expect(late.status).toBe(409)
    expect((await late.json()).error).toMatchObject({
      code: "task_ended",
      message: "This task ended already (completed): there is nothing to cancel."
    })
    const read = await (await node.fetch(`/v1/tasks/${task.id}`, { apiKey })).json()
    expect(read).toMatchObject({ status: "completed", result: "done", finished_at: task.finished_at })
    // cancelled once, a second cancel says so
    const slow = await createAgent(node, apiKey, {
      name: "slow to cancel",
      model: { provider: "scripted", script: [{ text: "late", delay_ms: 20_000 }] }
    })
    const running = await (await invokeAgent(node, apiKey, slow.id, "?", { async: true })).json()
    const first = await cancel(running.id)
    expect({ status: first.status, task: (await first.json()).status }).toEqual({ status: 200, task: "cancelled" })
    const second = await cancel(running.id)
    expect(second.status).toBe(409)
    expect((await second.json()).error.message).toBe("This task ended already (cancelled): there is nothing to cancel.")
  })
})

describe("limits", () => {
  it("ends a task that runs past its time limit in error", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "too slow",
      timeout_seconds: 1,
      model: { provider: "scripted", script: [{ text: "late", delay_ms: 10_000 }] }
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "?")).json()
    expect(task.status).toBe("error")
    expect(task.result).toContain("longer than")
    expect(task.error_code).toBe("timeout")
  })

  it("never spends past the budget under 50 concurrent invocations", async () => {
    // each call reserves about $0.1 and costs less here; a $0.20 budget admits only some of them
    const agent = await createAgent(node, apiKey, {
      name: "budgeted",
      budget: { limit_usd: 0.2, period: "total" },
      model: { provider: "scripted", script: [{ text: "an answer of a reasonable length", delay_ms: 50 }] }
    })
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => invokeAgent(node, apiKey, agent.id, "spend a little"))
    )
    const statuses = responses.map((r) => r.status)
    const bodies = await Promise.all(responses.map((r) => r.json()))
    const completed = bodies.filter((b) => b.status === "completed").length
    const stopped = bodies.filter((b) => b.status === "error" && String(b.result).includes("budget")).length
    const refused = statuses.filter((s) => s === 402).length
    expect(completed).toBeGreaterThan(0)
    expect(completed + stopped + refused).toBe(50)
    expect(stopped + refused).toBeGreaterThan(0)
    const status = await (await node.fetch(`/v1/agents/${agent.id}`, { apiKey })).json()
    expect(status.spent_usd).toBeLessThanOrEqual(0.2)
    expect(status.spent_usd).toBeGreaterThan(0)
    // a call was refused for lack of budget: new invocations are refused up front with 402
    const again = await invokeAgent(node, apiKey, agent.id, "more")
    expect(again.status).toBe(402)
    expect((await again.json()).error.code).toBe("budget_exhausted")
    for (const b of bodies.filter((b) => b.error !== undefined)) expect(b.error.code).toBe("budget_exhausted")
  })

  it("refuses new invocations with 402 once the budget is spent", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "tiny budget",
      budget: { limit_usd: 0.05 },
      model: { provider: "scripted", script: [{ text: "x".repeat(200) }] }
    })
    const first = await (await invokeAgent(node, apiKey, agent.id, "spend")).json()
    expect(["completed", "error"]).toContain(first.status)
    const second = await invokeAgent(node, apiKey, agent.id, "spend")
    expect(second.status).toBe(402)
    const body = await second.json()
    expect(body.error.code).toBe("budget_exhausted")
    // a budget in total: no "per total", and no next period to wait for
    expect(body.error.message).toContain("The agent's budget of $0.05 in total ")
    expect(body.error.message).not.toContain("period")
    const raised = await node.fetch(`/v1/agents/${agent.id}`, {
      ...json({ budget: { limit_usd: 100 } }),
      method: "PATCH",
      apiKey
    })
    expect(raised.status).toBe(200)
    expect((await invokeAgent(node, apiKey, agent.id, "spend")).status).toBe(200)
  })
})

describe("a budget lowered while a task runs", () => {
  it("stops its spending at once: no call begins past the new cap, and new invocations get 402", async () => {
    // six model calls of ~$0.05, each taking a while; $10 leaves this node a lease of many calls' worst case
    const steps = Array.from({ length: 6 }, (_, i) => ({
      tool_calls: [{ name: "getPet", arguments: { path_params: { petId: String(i) } } }],
      delay_ms: 300
    }))
    const agent = await createAgent(node, apiKey, {
      name: "lowered",
      budget: { limit_usd: 10, period: "total" },
      model: { provider: "scripted", max_output_tokens: 50, script: [...steps, { text: "all done" }] },
      skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
    })
    const accepted = await (await invokeAgent(node, apiKey, agent.id, "go", { async: true })).json()
    const modelCalls = async () => (await thread(accepted.id)).filter((e: any) => e.type === "model_call").length
    let before = 0
    while (before === 0) before = await modelCalls()
    // below what was spent already: the call in flight ends, and no other begins
    const lowered = await node.fetch(`/v1/agents/${agent.id}`, {
      ...json({ budget: { limit_usd: 0.01, period: "total" } }),
      method: "PATCH",
      apiKey
    })
    expect(lowered.status).toBe(200)
    const refused = await invokeAgent(node, apiKey, agent.id, "more", { async: true })
    expect(refused.status).toBe(402)
    expect((await refused.json()).error.code).toBe("budget_exhausted")
    const ended = await waitForTask(node, apiKey, accepted.id)
    expect(ended.status).toBe("error")
    expect(ended.result).toContain("budget")
    // at most the call in flight when it was read and one begun before the PATCH answered; not the six
    expect(await modelCalls()).toBeLessThanOrEqual(before + 2)
  })
})

describe("clearing limits", () => {
  it("null in a PATCH removes max_tokens and timeout_seconds, as it does the budget; left out, they stay", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "limited",
      max_tokens: 1,
      timeout_seconds: 30,
      budget: { limit_usd: 100 },
      model: { provider: "scripted", script: [{ text: "an answer" }] }
    })
    expect(agent).toMatchObject({ max_tokens: 1, timeout_seconds: 30 })
    const capped = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(capped).toMatchObject({ status: "error", result: expect.stringContaining("max_tokens") })
    const patch = (body: unknown) => node.fetch(`/v1/agents/${agent.id}`, { ...json(body), method: "PATCH", apiKey })
    const renamed = await patch({ name: "still limited" })
    expect(await renamed.json()).toMatchObject({ max_tokens: 1, timeout_seconds: 30, budget: { limit_usd: 100 } })
    const cleared = await patch({ max_tokens: null, timeout_seconds: null, budget: null })
    expect(cleared.status).toBe(200)
    expect(await cleared.json()).toMatchObject({ max_tokens: null, timeout_seconds: null, budget: null })
    expect(await (await node.fetch(`/v1/agents/${agent.id}`, { apiKey })).json())
      .toMatchObject({ max_tokens: null, timeout_seconds: null, budget: null })
    const free = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(free).toMatchObject({ status: "completed", result: "an answer" })
    // a value out of range is still refused
    const zero = await patch({ max_tokens: 0 })
    expect(zero.status).toBe(400)
    expect((await zero.json()).error.details.issues[0].path).toBe("max_tokens")
  })
})

describe("agent versions", () => {
  it("runs a task with the agent as it was invoked, also when the agent changes while it runs", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "versioned",
      model: { provider: "scripted", script: [{ text: "first answer", delay_ms: 600 }] }
    })
    expect(agent.version).toBe(1)
    const running = await (await invokeAgent(node, apiKey, agent.id, "hi", { async: true })).json()
    expect(running.agent_version).toBe(1)
    const patched = await node.fetch(`/v1/agents/${agent.id}`, {
      ...json({ model: { provider: "scripted", script: [{ text: "second answer" }] } }),
      method: "PATCH",
      apiKey
    })
    expect(patched.status).toBe(200)
    expect((await patched.json()).version).toBe(2)
    const first = await waitForTask(node, apiKey, running.id)
    expect(first).toMatchObject({ status: "completed", result: "first answer", agent_version: 1 })
    const second = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(second).toMatchObject({ status: "completed", result: "second answer", agent_version: 2 })
    const listed = await (await node.fetch(`/v1/tasks?agent_id=${agent.id}`, { apiKey })).json()
    expect(listed.items.map((t: any) => t.agent_version)).toEqual([2, 1])
    expect((await (await node.fetch(`/v1/agents/${agent.id}`, { apiKey })).json()).version).toBe(2)
    // a PATCH that changes nothing makes no version
    const same = await node.fetch(`/v1/agents/${agent.id}`, {
      ...json({ model: { provider: "scripted", script: [{ text: "second answer" }] } }),
      method: "PATCH",
      apiKey
    })
    expect((await same.json()).version).toBe(2)
  })
})

describe("listing tasks", () => {
  it("filters by agent, status and user, and pages newest first with a cursor", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "lister",
      model: { provider: "scripted", script: [{ text: "ok" }] }
    })
    const ids: Array<string> = []
    for (const who of ["a", "b", "a", "a"]) {
      const body = { input: { text: "hi", user: { id: `list-${who}`, email: `${who}@example.com` } } }
      ids.push((await (await invokeAgent(node, apiKey, agent.id, "hi", { body })).json()).id)
    }
    const page1 = await (await node.fetch(`/v1/tasks?agent_id=${agent.id}&user_id=list-a&limit=2`, { apiKey })).json()
    expect(page1.items.map((t: any) => t.id)).toEqual([ids[3], ids[2]])
    const page2 =
      await (await node.fetch(`/v1/tasks?agent_id=${agent.id}&user_id=list-a&limit=2&cursor=${page1.next_cursor}`, {
        apiKey
      })).json()
    expect(page2.items.map((t: any) => t.id)).toEqual([ids[0]])
    expect(page2.next_cursor).toBeNull()
    const errors = await (await node.fetch(`/v1/tasks?agent_id=${agent.id}&status=error`, { apiKey })).json()
    expect(errors.items).toEqual([])
    const future = new Date(Date.now() + 60_000).toISOString()
    const later = await (await node.fetch(`/v1/tasks?agent_id=${agent.id}&created_after=${future}`, { apiKey })).json()
    expect(later.items).toEqual([])
    expect((await node.fetch("/v1/tasks?status=nonsense", { apiKey })).status).toBe(400)
    // an agent the caller cannot see is 404 (as for usage and events), not an empty page
    const unknown = await node.fetch("/v1/tasks?agent_id=00000000-0000-4000-8000-000000000000", { apiKey })
    expect(unknown.status).toBe(404)
    expect((await unknown.json()).error.code).toBe("not_found")
    // a range that ends before it starts is a mistake, not an empty page
    const backwards = await call(
      node,
      apiKey,
      "GET",
      `/v1/tasks?created_after=${future}&created_before=2020-01-01T00:00:00Z`
    )
    expectError(backwards, 400, "invalid_time_range")
    expect(backwards.body.error.message).toBe("`created_after` must be before `created_before`.")
    expect((await node.fetch("/v1/tasks?cursor=garbage", { apiKey })).status).toBe(400)
  })
})

describe("listing agents", () => {
  it("answers every agent at once, or pages them oldest first with limit and cursor, as the key may see", async () => {
    const org = await node.bootstrap()
    const ids: Array<string> = []
    for (let i = 0; i < 6; i++) {
      ids.push((await call(node, org.api_key, "POST", "/v1/agents", scriptedAgent(`a${i}`))).body.id)
    }
    expect((await call(node, org.api_key, "DELETE", `/v1/agents/${ids.pop()}`)).status).toBe(204)
    // one written with microseconds (as by SQL), last on a page, is neither repeated nor skipped
    await withDatabase(
      node,
      (db) =>
        db.query("UPDATE agents SET created_at = created_at + interval '123 microseconds' WHERE id = $1", [ids[1]])
    )
    const all = await call(node, org.api_key, "GET", "/v1/agents")
    expect(Object.keys(all.body).sort()).toEqual(["items", "next_cursor", "total"])
    expect(all.body).toMatchObject({ total: 5, next_cursor: null })
    const order = all.body.items.map((a: any) => a.id)
    expect([...order].sort()).toEqual([...ids].sort())
    const paged = await pageThrough(node, org.api_key, "/v1/agents", 2)
    expect(paged.ids).toEqual(order)
    expect(paged.totals).toEqual([5, 5, 5])
    // `cursor` alone: 50 a page
    const first = await call(node, org.api_key, "GET", `/v1/agents?limit=1`)
    const rest = await call(node, org.api_key, "GET", `/v1/agents?cursor=${first.body.next_cursor}`)
    expect(rest.body).toMatchObject({ total: 5, next_cursor: null })
    expect(rest.body.items.map((a: any) => a.id)).toEqual(order.slice(1))
    // a key limited to agents pages those only
    const limited = await call(node, org.api_key, "POST", "/v1/api-keys", {
      name: "limited",
      kind: "organization",
      agent_ids: [order[0], order[2], order[3]]
    })
    const mine = await pageThrough(node, limited.body.api_key, "/v1/agents", 2)
    expect(mine).toEqual({ ids: [order[0], order[2], order[3]], totals: [3, 3] })
    expectError(await call(node, org.api_key, "GET", "/v1/agents?limit=0"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/agents?limit=201"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/agents?cursor=zz"), 400, "invalid_cursor")
  })
})

describe("waiting for a task", () => {
  it("answers a long poll as soon as the task ends, not when the wait runs out", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "slowish",
      model: { provider: "scripted", script: [{ text: "done", delay_ms: 700 }] }
    })
    const accepted = await (await invokeAgent(node, apiKey, agent.id, "?", { async: true })).json()
    const started = Date.now()
    const task = await (await node.fetch(`/v1/tasks/${accepted.id}?wait=20`, { apiKey })).json()
    const waited = Date.now() - started
    expect(task).toMatchObject({ id: accepted.id, status: "completed", result: "done" })
    expect(waited).toBeLessThan(10_000)
    // an ended task answers at once; a running one answers when the wait runs out
    const again = await (await node.fetch(`/v1/tasks/${accepted.id}?wait=20`, { apiKey })).json()
    expect(again.status).toBe("completed")
    const slow = await createAgent(node, apiKey, {
      name: "slow",
      model: { provider: "scripted", script: [{ text: "late", delay_ms: 5000 }] }
    })
    const running = await (await invokeAgent(node, apiKey, slow.id, "?", { async: true })).json()
    const partial = await (await node.fetch(`/v1/tasks/${running.id}?wait=1`, { apiKey })).json()
    expect(["pending", "executing"]).toContain(partial.status)
    expect((await node.fetch(`/v1/tasks/${running.id}?wait=61`, { apiKey })).status).toBe(400)
    // a cancel wakes the waiter too
    const waiting = node.fetch(`/v1/tasks/${running.id}?wait=20`, { apiKey }).then((r) => r.json())
    await new Promise((r) => setTimeout(r, 200))
    await node.fetch(`/v1/tasks/${running.id}/cancel`, { method: "POST", apiKey })
    expect((await waiting).status).toBe("cancelled")
  })
})

describe("deleting an agent", () => {
  it("pauses its schedules in the same transaction, saying why, audited; they cannot be resumed or triggered", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const every = await createSchedule(node, org.api_key, { agent_id: agentId, every: "2s", overlap: "allow" })
    const paused = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "0 0 1 * *", enabled: false })
    const other = await createSchedule(node, org.api_key, {
      agent_id: await createScriptedAgent(node, org.api_key),
      cron: "0 0 1 * *"
    })
    expect((await call(node, org.api_key, "DELETE", `/v1/agents/${agentId}`)).status).toBe(204)

    const after = await call(node, org.api_key, "GET", `/v1/schedules/${every.id}`)
    expect(after.body).toMatchObject({ enabled: false, next_runs: [], last_run: { status: "failed", task_id: null } })
    expect(after.body.last_run.reason).toContain("agent was deleted")
    expect((await call(node, org.api_key, "GET", `/v1/schedules/${paused.id}`)).body).toMatchObject({
      enabled: false,
      last_run: null
    })
    expect((await call(node, org.api_key, "GET", `/v1/schedules/${other.id}`)).body.enabled).toBe(true)
    const pauses = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "PAUSE_SCHEDULE")
    expect(pauses.map((e) => e.targets[0].id)).toEqual([every.id])
    expect(pauses[0].details).toMatchObject({ agent_id: agentId })

    // no run is made nor recorded failed any more
    const ticks = (await ticksOf(node, every.id)).length
    await new Promise((r) => setTimeout(r, 2500))
    expect((await ticksOf(node, every.id)).length).toBe(ticks)

    const resumed = await call(node, org.api_key, "POST", `/v1/schedules/${every.id}/resume`)
    expectError(resumed, 409, "schedule_agent_deleted")
    expect(resumed.body.error.message).toContain(`its agent '${agentId}' was deleted`)
    expectError(
      await call(node, org.api_key, "PATCH", `/v1/schedules/${paused.id}`, { enabled: true }),
      409,
      "schedule_agent_deleted"
    )
    expectError(
      await call(node, org.api_key, "POST", `/v1/schedules/${every.id}/trigger`),
      409,
      "schedule_agent_deleted"
    )
    expect((await call(node, org.api_key, "GET", `/v1/schedules/${every.id}`)).body.enabled).toBe(false)
    // still listed by its agent, to be found and deleted or pointed at another agent
    const listed = await call(node, org.api_key, "GET", `/v1/schedules?agent_id=${agentId}`)
    expect(listed.body.items.map((s: any) => s.enabled)).toEqual([false, false])
    const moved = await call(node, org.api_key, "PATCH", `/v1/schedules/${every.id}`, {
      agent_id: other.agent_id,
      enabled: true
    })
    expect(moved.status, JSON.stringify(moved.body)).toBe(200)
    expect(moved.body).toMatchObject({ agent_id: other.agent_id, enabled: true })
    await call(node, org.api_key, "POST", `/v1/schedules/${every.id}/pause`)
  })
})
