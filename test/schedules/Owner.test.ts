import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, auditEvents, call, expectError, waitingOn, withDatabase } from "../access/support.js"
import { eventually } from "../support/Poll.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createSchedule, createScriptedAgent, runsOf, ticksOf, until } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

/** An organization key with this role, limited to these agents. */
const limitedKey = async (adminKey: string, role: string, agentIds: ReadonlyArray<string>) => {
  const r = await call(node, adminKey, "POST", "/v1/api-keys", {
    name: `limited ${role}`,
    kind: "organization",
    role,
    agent_ids: agentIds
  })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return { key: r.body.api_key as string, keyId: r.body.id as string }
}

describe("a schedule made by an organization key limited to agents", () => {
  it("cannot be pointed at an agent that key may not use: 403, the schedule unchanged", async () => {
    const org = await node.bootstrap()
    const allowed = await createScriptedAgent(node, org.api_key)
    const other = await createScriptedAgent(node, org.api_key)
    const pipeline = await limitedKey(org.api_key, "builder", [allowed])
    const created = await createSchedule(node, pipeline.key, { agent_id: allowed, cron: "0 0 1 1 *" })
    // the Super admin may use `other`; the key the runs are invoked as may not
    const moved = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, { agent_id: other })
    expectError(moved, 403, "forbidden")
    expect(moved.body.error.message).toContain(other)
    expect(moved.body.error.message).toContain("organization key that created the schedule may not use")
    const after = await call(node, org.api_key, "GET", `/v1/schedules/${created.id}`)
    expect(after.body.agent_id).toBe(allowed)
    // paused too: it could be resumed later
    const paused = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, {
      agent_id: other,
      enabled: false
    })
    expectError(paused, 403, "forbidden")
    // another agent of the key's own is fine
    const second = await createScriptedAgent(node, org.api_key)
    const wider = await limitedKey(org.api_key, "builder", [allowed, second])
    const s2 = await createSchedule(node, wider.key, { agent_id: allowed, cron: "0 0 1 1 *" })
    const ok = await call(node, org.api_key, "PATCH", `/v1/schedules/${s2.id}`, { agent_id: second })
    expect(ok.status, JSON.stringify(ok.body)).toBe(200)
    expect(ok.body.agent_id).toBe(second)
  })

  it("one pointed at such an agent anyway (stored before the rule) records a failed run, runs nothing, and pauses", async () => {
    const org = await node.bootstrap()
    const allowed = await createScriptedAgent(node, org.api_key)
    const other = await createScriptedAgent(node, org.api_key)
    const pipeline = await limitedKey(org.api_key, "admin", [allowed])
    const created = await createSchedule(node, pipeline.key, {
      agent_id: allowed,
      cron: "0 0 1 1 *",
      enabled: false
    })
    await withDatabase(node, (db) => db.query("UPDATE schedules SET agent_id = $2 WHERE id = $1", [created.id, other]))
    // a manual run: refused before any task, saying why
    const triggered = await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/trigger`)
    expectError(triggered, 409, "conflict")
    expect(triggered.body.error.message).toContain("may not use")
    expect(await runsOf(node, org.api_key, created.id)).toEqual([])
    // scheduled runs, by the claim: the same
    await withDatabase(node, (db) =>
      db.query(
        "UPDATE schedules SET enabled = true, cron = '* * * * * *', overlap = 'allow', next_tick = now(), " +
          "next_run_at = now() WHERE id = $1",
        [created.id]
      ))
    const refused = await until(
      "a refused scheduled run",
      async () => (await ticksOf(node, created.id)).find((t) => t.kind !== "manual" && t.status === "failed")
    )
    expect(refused.reason).toContain("may not use")
    expect(refused.task_id).toBeNull()
    expect(await runsOf(node, org.api_key, created.id)).toEqual([])
    const after = await call(node, org.api_key, "GET", `/v1/schedules/${created.id}`)
    expect(after.body).toMatchObject({ enabled: false, next_runs: [] })
    // the pause is in the audit log, by the scheduler, saying why (the trigger found it paused already)
    const pauses = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "PAUSE_SCHEDULE")
    expect(pauses).toHaveLength(1)
    expect(pauses[0]).toMatchObject({
      actor_type: "system",
      actor_id: "scheduler",
      targets: [{ type: "schedule", id: created.id, name: created.name }]
    })
    expect(pauses[0].details.reason).toContain("may not use")
    // resuming it is refused the same way; pointed back at the key's agent it resumes
    expectError(await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/resume`), 409, "conflict")
    const back = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, {
      agent_id: allowed,
      enabled: true,
      cron: "0 0 1 1 *"
    })
    expect(back.status, JSON.stringify(back.body)).toBe(200)
    expect(back.body).toMatchObject({ agent_id: allowed, enabled: true })
    await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/pause`)
  })
})

describe("a PATCH that changes nothing", () => {
  it("returns the schedule as it is: not written (updated_at kept), nothing audited", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, { agent_id: agentId, every: "1h", enabled: false })
    const stored = () =>
      withDatabase(
        node,
        async (db) =>
          (await db.query("SELECT updated_at, next_run_at FROM schedules WHERE id = $1", [created.id])).rows[0]
      )
    const before = await stored()
    for (
      const body of [{}, { name: created.name, every: "1h", enabled: false }, { input: created.input }]
    ) {
      const r = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, body)
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(r.body).toEqual({ ...created, next_runs: r.body.next_runs })
    }
    const paused = await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/pause`)
    expect(paused.status).toBe(200)
    expect(await stored()).toEqual(before)
    const actions = (await auditEvents(node, org.organization_id)).map((e) => e.action)
    expect(actions.filter((a) => a.endsWith("_SCHEDULE"))).toEqual(["CREATE_SCHEDULE"])
    // a change is still written and audited
    const renamed = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, { name: "renamed" })
    expect(renamed.body.name).toBe("renamed")
    expect((await stored()).updated_at.getTime()).toBeGreaterThan(before.updated_at.getTime())
    const after = (await auditEvents(node, org.organization_id)).map((e) => e.action)
    expect(after.filter((a) => a.endsWith("_SCHEDULE"))).toEqual(["CREATE_SCHEDULE", "UPDATE_SCHEDULE"])
  })
})

describe("a manual run", () => {
  it("is audited under whoever triggered it: the task itself is invoked as the schedule's creator", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "0 0 1 1 *" })
    const builder = await addMember(node, org.api_key, "builder")
    const triggered = await call(node, builder.key, "POST", `/v1/schedules/${created.id}/trigger`)
    expect(triggered.status, JSON.stringify(triggered.body)).toBe(202)
    const events = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "TRIGGER_SCHEDULE")
    expect(events).toEqual([expect.objectContaining({
      actor_type: "user",
      actor_id: builder.userId,
      actor_key_id: builder.keyId,
      targets: [{ type: "schedule", id: created.id, name: created.name }, { type: "task", id: triggered.body.id }]
    })])
    // a trigger refused makes no task and records none
    await call(node, org.api_key, "PATCH", `/v1/members/${builder.userId}`, { role: "member" })
    expectError(await call(node, builder.key, "POST", `/v1/schedules/${created.id}/trigger`), 403, "forbidden")
    expect((await auditEvents(node, org.organization_id)).filter((e) => e.action === "TRIGGER_SCHEDULE"))
      .toHaveLength(1)
  })
})

describe("a manual run of a schedule deleted meanwhile", () => {
  it("is a 404 not_found, never a 500", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "0 0 1 1 *" })
    // the delete is held open in a transaction: the trigger reads the schedule (still committed), then waits on
    // its row to record the run; the delete commits under it
    await withDatabase(node, async (db) => {
      await db.query("BEGIN")
      await db.query("DELETE FROM schedules WHERE id = $1", [created.id])
      const pending = call(node, org.api_key, "POST", `/v1/schedules/${created.id}/trigger`)
      await eventually(
        async () =>
          (await withDatabase(node, (probe) =>
              probe.query(
                "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%schedule_ticks%'"
              ))).rowCount! > 0 || undefined,
        10_000,
        "the trigger to wait on the deleted schedule's row"
      )
      await db.query("COMMIT")
      const triggered = await pending
      expectError(triggered, 404, "not_found")
      expect(triggered.body.error.message).toContain(created.id)
    })
    expect(await runsOf(node, org.api_key, created.id)).toEqual([])
  })
})

describe("two changes at once", () => {
  it("a pause and a rename made together both hold: neither is lost to the other", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "0 0 1 1 *" })
    // the row is held meanwhile: both requests are in before either writes
    const [paused, renamed] = await withDatabase(node, async (db) => {
      await db.query("BEGIN")
      await db.query("SELECT id FROM schedules WHERE id = $1 FOR UPDATE", [created.id])
      const both = Promise.all([
        call(node, org.api_key, "POST", `/v1/schedules/${created.id}/pause`),
        call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, { name: "renamed" })
      ])
      await waitingOn(node, "schedules", 2)
      await db.query("COMMIT")
      return both
    })
    expect([paused.status, renamed.status]).toEqual([200, 200])
    const after = await call(node, org.api_key, "GET", `/v1/schedules/${created.id}`)
    expect(after.body).toMatchObject({ name: "renamed", enabled: false })
  })
})
