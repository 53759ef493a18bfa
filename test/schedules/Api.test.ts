import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, auditEvents, call, expectError, orgKey, pageThrough, withDatabase } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createSchedule, createScriptedAgent, runsOf, ticksOf, until, user } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

describe("schedules REST API", () => {
  it("creates a schedule with its next 5 runs in UTC and local time, and reads it back", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, {
      agent_id: agentId,
      cron: "30 2 * * *",
      timezone: "Europe/Berlin",
      start_at: "2030-03-29T00:00:00Z"
    })
    expect(created).toMatchObject({
      agent_id: agentId,
      cron: "30 2 * * *",
      every: null,
      timezone: "Europe/Berlin",
      enabled: true,
      overlap: "skip",
      catchup_window: "1h",
      jitter: null,
      last_run: null,
      input: { text: "go", user }
    })
    const got = await call(node, org.api_key, "GET", `/v1/schedules/${created.id}`)
    expect(got.status).toBe(200)
    // 2030-03-31 is the spring-forward day in Berlin: 02:30 does not exist, the run is at 03:00
    expect(got.body.next_runs).toEqual([
      { utc: "2030-03-29T01:30:00.000Z", local: "2030-03-29T02:30:00.000+01:00" },
      { utc: "2030-03-30T01:30:00.000Z", local: "2030-03-30T02:30:00.000+01:00" },
      { utc: "2030-03-31T01:00:00.000Z", local: "2030-03-31T03:00:00.000+02:00" },
      { utc: "2030-04-01T00:30:00.000Z", local: "2030-04-01T02:30:00.000+02:00" },
      { utc: "2030-04-02T00:30:00.000Z", local: "2030-04-02T02:30:00.000+02:00" }
    ])
    const listed = await call(node, org.api_key, "GET", `/v1/schedules?agent_id=${agentId}`)
    expect(listed.body.items.map((s: any) => s.id)).toEqual([created.id])
    // another organization's agent is as unknown as one that never was: 404, not an empty list
    const other = await node.bootstrap()
    const theirs = await createScriptedAgent(node, other.api_key)
    const foreign = await call(node, org.api_key, "GET", `/v1/schedules?agent_id=${theirs}`)
    expect({ status: foreign.status, code: foreign.body.error?.code }).toEqual({ status: 404, code: "not_found" })
  })

  it("lists every schedule at once, or pages them with limit and cursor, oldest first", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) {
      ids.push((await createSchedule(node, org.api_key, { agent_id: agentId, every: "1h" })).id)
    }
    // one written with microseconds (as by SQL), last on a page, is neither repeated nor skipped
    await withDatabase(
      node,
      (db) =>
        db.query("UPDATE schedules SET created_at = created_at + interval '123 microseconds' WHERE id = $1", [ids[1]])
    )
    const all = await call(node, org.api_key, "GET", "/v1/schedules")
    expect(all.body).toMatchObject({ total: 5, next_cursor: null })
    const order = all.body.items.map((s: any) => s.id)
    expect([...order].sort()).toEqual([...ids].sort())
    const paged = await pageThrough(node, org.api_key, `/v1/schedules?agent_id=${agentId}`, 2)
    expect(paged).toEqual({ ids: order, totals: [5, 5, 5] })
    expectError(await call(node, org.api_key, "GET", "/v1/schedules?limit=0"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/schedules?limit=abc"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/schedules?cursor=zz"), 400, "invalid_cursor")
  })

  it("an invalid cron expression, time zone or duration is a 400 that names it", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const base = { name: "bad", agent_id: agentId, input: { text: "go", user } }
    const badCron = await call(node, org.api_key, "POST", "/v1/schedules", { ...base, cron: "61 * * * *" })
    expectError(badCron, 400, "invalid_cron")
    expect(badCron.body.error.message).toContain("61 * * * *")
    expect(badCron.body.error.message).not.toContain("not supported")
    // Quartz's extensions are named as such (the parser says only "Expected a positive integer")
    for (const cron of ["0 3 L * *", "0 0 1W * *", "0 0 ? * MON", "0 0 * * 5#2"]) {
      const quartz = await call(node, org.api_key, "POST", "/v1/schedules", { ...base, cron })
      expectError(quartz, 400, "invalid_cron")
      expect(quartz.body.error.message).toContain("`L`, `W`, `?` and `#` are not supported")
    }
    // names with those letters are read
    const named = await call(node, org.api_key, "POST", "/v1/schedules", { ...base, cron: "0 0 * JUL WED" })
    expect(named.status, JSON.stringify(named.body)).toBe(201)
    const badZone = await call(node, org.api_key, "POST", "/v1/schedules", {
      ...base,
      cron: "0 * * * *",
      timezone: "Mars/Olympus"
    })
    expectError(badZone, 400, "invalid_timezone")
    expect(badZone.body.error.message).toContain("Mars/Olympus")
    expectError(
      await call(node, org.api_key, "POST", "/v1/schedules", { ...base, cron: "@reboot" }),
      400,
      "invalid_cron"
    )
    expectError(
      await call(node, org.api_key, "POST", "/v1/schedules", { ...base, every: "0s" }),
      400,
      "invalid_duration"
    )
    expectError(await call(node, org.api_key, "POST", "/v1/schedules", base), 400, "validation_failed")
    const both = await call(node, org.api_key, "POST", "/v1/schedules", { ...base, cron: "* * * * *", every: "1m" })
    expectError(both, 400, "validation_failed")
    // like every validation_failed, with its issues
    expect(both.body.error.details).toEqual({
      issues: [{ path: "", message: "Give exactly one of `cron` and `every`." }]
    })
    const reversed = await call(node, org.api_key, "POST", "/v1/schedules", {
      ...base,
      every: "1h",
      start_at: "2030-01-02T00:00:00Z",
      end_at: "2030-01-01T00:00:00Z"
    })
    expectError(reversed, 400, "validation_failed")
    expect(reversed.body.error.message).toBe("`end_at`: is before `start_at`.")
    expect(reversed.body.error.details.issues).toEqual([{ path: "end_at", message: "is before `start_at`." }])
    // an input that is not an object says what it should be, not the field's documentation
    const notInput = await call(node, org.api_key, "POST", "/v1/schedules", { ...base, every: "1h", input: "go" })
    expectError(notInput, 400, "validation_failed")
    expect(notInput.body.error.message).not.toContain("What each run sends")
    expect(notInput.body.error.message).toContain("text")
    // one rule for every duration field: no duration, or one out of range, is invalid_duration naming the field
    for (
      const [body, field] of [
        [{ every: "1 minute" }, "every"],
        [{ every: "banana" }, "every"],
        [{ every: "400d" }, "every"],
        [{ cron: "0 * * * *", jitter: "-5s" }, "jitter"],
        [{ cron: "0 * * * *", catchup_window: "1 hour" }, "catchup_window"]
      ] as const
    ) {
      const r = await call(node, org.api_key, "POST", "/v1/schedules", { ...base, ...body })
      expectError(r, 400, "invalid_duration")
      expect(r.body.error.details).toEqual({ field })
      expect(r.body.error.message).toContain(`'${(body as Record<string, string>)[field]}'`)
    }
    const created = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "0 * * * *" })
    expectError(
      await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, { timezone: "Nowhere/Town" }),
      400,
      "invalid_timezone"
    )
    for (const [body, field] of [[{ every: "banana" }, "every"], [{ jitter: "-5s" }, "jitter"]] as const) {
      const r = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, body)
      expectError(r, 400, "invalid_duration")
      expect(r.body.error.details).toEqual({ field })
    }
    const bothChanged = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, {
      cron: "* * * * *",
      every: "1m"
    })
    expectError(bothChanged, 400, "validation_failed")
    expect(bothChanged.body.error.details.issues).toHaveLength(1)
    // a time zone is kept as the IANA database spells it, however it was written
    const zoned = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, { timezone: "europe/berlin" })
    expect(zoned.status, JSON.stringify(zoned.body)).toBe(200)
    expect(zoned.body.timezone).toBe("Europe/Berlin")
    const made = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "0 * * * *", timezone: "utc" })
    expect(made.timezone).toBe("UTC")
    // a jitter as long as the time between runs would make runs missed ones: refused, naming that time
    for (
      const [body, gap] of [
        [{ every: "1m", jitter: "1m" }, "1m"],
        [{ cron: "0 9,10 * * *", jitter: "2h" }, "1h"]
      ] as const
    ) {
      const r = await call(node, org.api_key, "POST", "/v1/schedules", { ...base, ...body })
      expectError(r, 400, "validation_failed")
      expect(r.body.error.details.issues.map((i: any) => i.path)).toEqual(["jitter"])
      expect(r.body.error.message).toContain(`between two runs (${gap})`)
    }
    const tight = await call(node, org.api_key, "PATCH", `/v1/schedules/${made.id}`, { jitter: "1h" })
    expectError(tight, 400, "validation_failed")
    const fits = await call(node, org.api_key, "PATCH", `/v1/schedules/${made.id}`, { jitter: "59m" })
    expect(fits.status, JSON.stringify(fits.body)).toBe(200)
    // a change of the timing is checked against the jitter kept
    expectError(
      await call(node, org.api_key, "PATCH", `/v1/schedules/${made.id}`, { every: "30m" }),
      400,
      "validation_failed"
    )
  })

  it("a cron that never matches a date is 400 invalid_cron on create, change and resume, never a 500", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const base = { name: "never", agent_id: agentId, input: { text: "go", user } }
    const never = await call(node, org.api_key, "POST", "/v1/schedules", { ...base, cron: "0 0 31 2 *" })
    expectError(never, 400, "invalid_cron")
    expect(never.body.error.message).toContain("'0 0 31 2 *' never matches a date")
    expect(never.body.error.details).toEqual({ field: "cron" })
    // a paused schedule too: its cron is checked when changed, not only when it runs
    const paused = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "0 0 1 * *", enabled: false })
    const changed = await call(node, org.api_key, "PATCH", `/v1/schedules/${paused.id}`, { cron: "0 0 31 4 *" })
    expectError(changed, 400, "invalid_cron")
    expect(changed.body.error.message).toContain("'0 0 31 4 *' never matches a date")
    expect((await call(node, org.api_key, "GET", `/v1/schedules/${paused.id}`)).body.cron).toBe("0 0 1 * *")
    // one stored before the rule reads back without runs, and resuming it says why it cannot run
    await withDatabase(node, (db) => db.query("UPDATE schedules SET cron = '0 0 31 4 *' WHERE id = $1", [paused.id]))
    const stored = await call(node, org.api_key, "GET", `/v1/schedules/${paused.id}`)
    expect(stored.status).toBe(200)
    expect(stored.body).toMatchObject({ cron: "0 0 31 4 *", next_runs: [] })
    expectError(await call(node, org.api_key, "POST", `/v1/schedules/${paused.id}/resume`), 400, "invalid_cron")
  })

  it("the scheduler moves a due schedule stored with a cron that never matches off, and goes on", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const stuck = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "0 0 1 1 *" })
    await withDatabase(node, (db) =>
      db.query(
        "UPDATE schedules SET cron = '0 0 31 2 *', next_tick = now() - interval '1 second', " +
          "next_run_at = now() - interval '1 second' WHERE id = $1",
        [stuck.id]
      ))
    await until("the schedule to be due no more", () =>
      withDatabase(node, async (db) => {
        const { rows } = await db.query("SELECT next_run_at FROM schedules WHERE id = $1", [stuck.id])
        return rows[0].next_run_at === null ? true : undefined
      }))
    expect(await ticksOf(node, stuck.id)).toEqual([])
    // the scheduler is alive: a schedule made after it runs
    const fine = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "* * * * * *", overlap: "allow" })
    await until("a run", async () => ((await runsOf(node, org.api_key, fine.id)).length > 0 ? true : undefined))
    await call(node, org.api_key, "POST", `/v1/schedules/${fine.id}/pause`)
  })

  it("Members read schedules but only Builders and above change them; another organization sees none", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const member = await addMember(node, org.api_key, "member")
    const builder = await addMember(node, org.api_key, "builder")
    const body = { name: "n", agent_id: agentId, cron: "0 * * * *", input: { text: "go", user } }
    expectError(await call(node, member.key, "POST", "/v1/schedules", body), 403, "forbidden")
    const created = await createSchedule(node, builder.key, body)
    expect((await call(node, member.key, "GET", `/v1/schedules/${created.id}`)).status).toBe(200)
    for (
      const [method, path, payload] of [
        ["PATCH", `/v1/schedules/${created.id}`, { name: "x" }],
        ["DELETE", `/v1/schedules/${created.id}`, undefined],
        ["POST", `/v1/schedules/${created.id}/pause`, undefined],
        ["POST", `/v1/schedules/${created.id}/resume`, undefined],
        ["POST", `/v1/schedules/${created.id}/trigger`, undefined]
      ] as const
    ) {
      expectError(await call(node, member.key, method, path, payload), 403, "forbidden")
    }
    // an organization key limited to another agent does not see it
    const other = await createScriptedAgent(node, org.api_key)
    const limited = await call(node, org.api_key, "POST", "/v1/api-keys", {
      name: "limited",
      kind: "organization",
      role: "builder",
      agent_ids: [other]
    })
    expect(limited.status).toBe(201)
    expectError(await call(node, limited.body.api_key, "GET", `/v1/schedules/${created.id}`), 404, "not_found")
    expect((await call(node, limited.body.api_key, "GET", "/v1/schedules")).body.items).toEqual([])
    expectError(await call(node, limited.body.api_key, "POST", "/v1/schedules", body), 404, "not_found")
    // another organization: its agent and its schedule are absent
    const stranger = await node.bootstrap()
    expectError(await call(node, stranger.api_key, "GET", `/v1/schedules/${created.id}`), 404, "not_found")
    expectError(await call(node, stranger.api_key, "DELETE", `/v1/schedules/${created.id}`), 404, "not_found")
    expectError(await call(node, stranger.api_key, "POST", "/v1/schedules", body), 404, "not_found")
    expect((await call(node, stranger.api_key, "GET", "/v1/schedules")).body.items).toEqual([])
    const builderKey = await orgKey(node, org.api_key, "builder")
    expect((await call(node, builderKey.key, "DELETE", `/v1/schedules/${created.id}`)).status).toBe(204)
  })

  it("create, change, pause, resume and delete are audited", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, { agent_id: agentId, every: "1h" })
    await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, { name: "renamed", jitter: "30s" })
    await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/pause`)
    await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/resume`)
    await call(node, org.api_key, "DELETE", `/v1/schedules/${created.id}`)
    const events = (await auditEvents(node, org.organization_id)).filter((e) => e.action.endsWith("_SCHEDULE"))
    expect(events.map((e) => e.action)).toEqual([
      "CREATE_SCHEDULE",
      "UPDATE_SCHEDULE",
      "PAUSE_SCHEDULE",
      "RESUME_SCHEDULE",
      "DELETE_SCHEDULE"
    ])
    expect(events[1].details).toEqual({ changed: ["jitter", "name"] })
    expect(events.every((e) => e.targets[0].id === created.id && e.targets[0].type === "schedule")).toBe(true)
  })

  it("runs on its schedule as tasks with source schedule, listed by schedule_id; trigger runs now", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, {
      agent_id: agentId,
      cron: "* * * * * *",
      overlap: "allow"
    })
    const runs = await until("three runs", async () => {
      const items = await runsOf(node, org.api_key, created.id)
      return items.length >= 3 ? items : undefined
    })
    for (const task of runs) {
      expect(task).toMatchObject({ source: "schedule", schedule_id: created.id, agent_id: agentId, user })
    }
    const paused = await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/pause`)
    expect(paused.body).toMatchObject({ enabled: false, next_runs: [] })
    expect(paused.body.last_run).toMatchObject({ kind: "scheduled", status: "fired" })
    const ticks = await ticksOf(node, created.id)
    // each tick made one task, and no task lacks its tick
    const tasks = await runsOf(node, org.api_key, created.id)
    expect(tasks.map((t) => t.id).sort()).toEqual(ticks.map((t) => t.task_id).sort())
    const triggered = await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/trigger`)
    expect(triggered.status).toBe(202)
    expect(triggered.body).toMatchObject({ source: "schedule", schedule_id: created.id, status: "pending" })
    expect(triggered.headers.get("location")).toBe(`/v1/tasks/${triggered.body.id}`)
    const after = await call(node, org.api_key, "GET", `/v1/schedules/${created.id}`)
    expect(after.body.last_run).toMatchObject({ kind: "manual", status: "fired", task_id: triggered.body.id })
    // tasks that are not a schedule's carry no schedule_id
    const plain = await call(node, org.api_key, "POST", `/v1/agents/${agentId}/invoke`, { input: { text: "x", user } })
    expect(plain.body.source).toBe("api")
    expect("schedule_id" in plain.body).toBe(false)
  })
})

describe("an end already past", () => {
  it("is refused when given, on create and on change: the schedule would never run", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const past = "2020-01-01T00:00:00Z"
    const refused = await call(node, org.api_key, "POST", "/v1/schedules", {
      name: "over",
      agent_id: agentId,
      cron: "0 * * * *",
      end_at: past,
      input: { text: "go", user }
    })
    expectError(refused, 400, "validation_failed")
    expect(refused.body.error.message).toContain("`end_at`: is in the past")
    const created = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "0 * * * *" })
    expectError(
      await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, { end_at: past }),
      400,
      "validation_failed"
    )
  })
})

describe("runs as its creator", () => {
  it("stops once its creator is no longer a Builder: the run is recorded failed with why, and the schedule paused", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const builder = await addMember(node, org.api_key, "builder")
    const created = await createSchedule(node, builder.key, {
      agent_id: agentId,
      cron: "* * * * * *",
      overlap: "allow"
    })
    await until("a run", async () => ((await runsOf(node, org.api_key, created.id)).length > 0 ? true : undefined))
    const demoted = await call(node, org.api_key, "PATCH", `/v1/members/${builder.userId}`, { role: "member" })
    expect(demoted.status, JSON.stringify(demoted.body)).toBe(200)
    const refused = await until("a refused run", async () => {
      const ticks = await ticksOf(node, created.id)
      return ticks.find((t) => t.status === "failed")
    })
    expect(refused.reason).toContain("no longer a Builder")
    expect(refused.task_id).toBeNull()
    // and the schedule is paused, with the refusal as its last run
    const after = await call(node, org.api_key, "GET", `/v1/schedules/${created.id}`)
    expect(after.body).toMatchObject({ enabled: false, next_runs: [], last_run: { status: "failed" } })
    expect(after.body.last_run.reason).toContain("no longer a Builder")
    const before = (await ticksOf(node, created.id)).length
    await new Promise((r) => setTimeout(r, 1500))
    expect((await ticksOf(node, created.id)).length).toBe(before)
    // a manual run is refused with why, not a 500
    const triggered = await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/trigger`)
    expect(triggered.status, JSON.stringify(triggered.body)).toBe(409)
    expect(triggered.body.error.message).toContain("no longer a Builder")
    // nor is resuming it, which would only fail again at its next run
    const resumed = await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/resume`)
    expectError(resumed, 409, "conflict")
    expect(resumed.body.error.message).toContain("no longer a Builder")
    expectError(
      await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, { enabled: true }),
      409,
      "conflict"
    )
    expect((await call(node, org.api_key, "GET", `/v1/schedules/${created.id}`)).body.enabled).toBe(false)
    // a change that leaves it paused is still allowed
    const renamed = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, { name: "renamed" })
    expect(renamed.body).toMatchObject({ name: "renamed", enabled: false })
  })
})

describe("made with an organization key", () => {
  it("stops once that key is revoked: the run is recorded failed with why, and resuming it is refused", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const pipeline = await orgKey(node, org.api_key, "admin")
    const created = await createSchedule(node, pipeline.key, {
      agent_id: agentId,
      cron: "* * * * * *",
      overlap: "allow"
    })
    await until("a run", async () => ((await runsOf(node, org.api_key, created.id)).length > 0 ? true : undefined))
    expect((await call(node, org.api_key, "DELETE", `/v1/api-keys/${pipeline.keyId}`)).status).toBe(200)
    const refused = await until("a refused run", async () => {
      const ticks = await ticksOf(node, created.id)
      return ticks.find((t) => t.status === "failed")
    })
    expect(refused.reason).toContain("key that created the schedule was revoked")
    const after = await call(node, org.api_key, "GET", `/v1/schedules/${created.id}`)
    expect(after.body).toMatchObject({ enabled: false, next_runs: [], last_run: { status: "failed" } })
    const resumed = await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/resume`)
    expectError(resumed, 409, "conflict")
    expect(resumed.body.error.message).toContain("revoked")
  })
})

describe("an agent gone", () => {
  it("a due schedule whose agent was deleted (before deleting paused it) is paused, its run failed with why", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, {
      agent_id: agentId,
      cron: "* * * * * *",
      overlap: "allow"
    })
    // a row left from before the fix: its agent deleted, the schedule still enabled
    await withDatabase(node, (db) => db.query("UPDATE agents SET deleted_at = now() WHERE id = $1", [agentId]))
    const refused = await until(
      "a refused run",
      async () => (await ticksOf(node, created.id)).find((t) => t.status === "failed")
    )
    expect(refused.reason).toContain("agent was deleted")
    const after = await call(node, org.api_key, "GET", `/v1/schedules/${created.id}`)
    expect(after.body).toMatchObject({ enabled: false, next_runs: [], last_run: { status: "failed" } })
    const before = (await ticksOf(node, created.id)).length
    await new Promise((r) => setTimeout(r, 1500))
    expect((await ticksOf(node, created.id)).length).toBe(before)
    expectError(
      await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/resume`),
      409,
      "schedule_agent_deleted"
    )
  })
})

describe("catch-up after downtime", () => {
  /** A schedule whose next run was due `lateMs` ago, as after the node was down that long. */
  const missed = async (org: { api_key: string }, lateMs: number, catchupWindow?: string) => {
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, {
      agent_id: agentId,
      cron: "0 0 1 1 *",
      ...(catchupWindow === undefined ? {} : { catchup_window: catchupWindow })
    })
    const due = new Date(Math.floor((Date.now() - lateMs) / 60_000) * 60_000)
    // the yearly cron's tick is moved to a minute boundary (it is any time, for the catch-up rule)
    await withDatabase(
      node,
      (db) =>
        db.query("UPDATE schedules SET cron = '* * * * *', next_tick = $2, next_run_at = $2 WHERE id = $1", [
          created.id,
          due
        ])
    )
    return created
  }

  it("a run missed by less than the window (default 1h) is made once, as catchup", async () => {
    const org = await node.bootstrap()
    const s = await missed(org, 20 * 60_000)
    const ticks = await until("the catch-up tick", async () => {
      const t = await ticksOf(node, s.id)
      return t.length > 0 && t[0]!.status === "fired" ? t : undefined
    })
    expect(ticks[0]).toMatchObject({ kind: "catchup", status: "fired" })
    expect((await runsOf(node, org.api_key, s.id)).map((t) => t.id)).toContain(ticks[0]!.task_id)
    // one run for the twenty missed minutes, the latest of them
    expect(Date.now() - ticks[0]!.scheduled_for.getTime()).toBeLessThan(61_000)
  })

  it("a run missed by more than its window is not made; the schedule goes on from now", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, {
      agent_id: agentId,
      cron: "0 * * * *",
      catchup_window: "10m"
    })
    const due = new Date(Math.floor((Date.now() - 40 * 60_000) / 60_000) * 60_000)
    await withDatabase(
      node,
      (db) =>
        db.query("UPDATE schedules SET cron = $3, next_tick = $2, next_run_at = $2 WHERE id = $1", [
          created.id,
          due,
          `${due.getUTCMinutes()} * * * *`
        ])
    )
    await until("the schedule to move on", () =>
      withDatabase(node, async (db) => {
        const { rows } = await db.query("SELECT next_tick FROM schedules WHERE id = $1", [created.id])
        return rows[0].next_tick.getTime() > Date.now() ? true : undefined
      }))
    expect(await ticksOf(node, created.id)).toEqual([])
  })
})

describe("a change that leaves the timing alone", () => {
  it("keeps a run its jitter holds back: renaming or rewording the schedule does not drop it", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "0 0 1 1 *", jitter: "1h" })
    // as at 07:05 for a 07:00 run its jitter starts at 07:40: the tick passed, the run is still ahead
    const tick = new Date(Date.now() - 5 * 60_000)
    const runAt = new Date(Date.now() + 35 * 60_000)
    const next = () =>
      withDatabase(
        node,
        async (db) =>
          (await db.query("SELECT next_tick, next_run_at FROM schedules WHERE id = $1", [created.id])).rows[0]
      )
    await withDatabase(
      node,
      (db) => db.query("UPDATE schedules SET next_tick = $2, next_run_at = $3 WHERE id = $1", [created.id, tick, runAt])
    )
    const r = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, {
      name: "renamed",
      input: { text: "reworded", user },
      overlap: "allow",
      catchup_window: "2h"
    })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(await next()).toEqual({ next_tick: tick, next_run_at: runAt })
    // a change of its timing computes the next run again, from now
    const moved = await call(node, org.api_key, "PATCH", `/v1/schedules/${created.id}`, { cron: "0 0 1 2 *" })
    expect(moved.status, JSON.stringify(moved.body)).toBe(200)
    expect((await next()).next_tick.getTime()).toBeGreaterThan(Date.now())
  })
})

describe("overlap, with runs that take longer than the period", () => {
  /** An every-second schedule of an agent whose runs take 2.5 s, left to run for about 5 s, then paused. */
  const runFor = async (overlap: string) => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key, 2500)
    const created = await createSchedule(node, org.api_key, { agent_id: agentId, cron: "* * * * * *", overlap })
    await new Promise((r) => setTimeout(r, 5200))
    await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/pause`)
    const tasks = await runsOf(node, org.api_key, created.id)
    return { ticks: await ticksOf(node, created.id), tasks }
  }
  /** Whether two of the tasks ran at the same time. */
  const overlapping = (tasks: Array<any>) => {
    const spans = tasks.map((
      t
    ) => [Date.parse(t.created_at), t.finished_at === null ? Infinity : Date.parse(t.finished_at)])
      .sort((a, b) => a[0]! - b[0]!)
    return spans.some((s, i) => i > 0 && s[0]! < spans[i - 1]![1]!)
  }

  it("skip: a run due while the previous one goes is skipped; runs never overlap", async () => {
    const { tasks, ticks } = await runFor("skip")
    expect(ticks.filter((t) => t.status === "skipped").length).toBeGreaterThan(0)
    expect(ticks.filter((t) => t.status === "fired").length).toBe(tasks.length)
    expect(tasks.length).toBeGreaterThanOrEqual(2)
    expect(tasks.length).toBeLessThanOrEqual(3)
    expect(overlapping(tasks)).toBe(false)
  })

  it("buffer_one: one run waits and starts when the previous ends; the rest are skipped", async () => {
    const { tasks, ticks } = await runFor("buffer_one")
    // the run that waited was made after the previous one ended
    const waited = ticks.find((t) => t.status === "fired" && t.scheduled_for > ticks[0]!.scheduled_for)
    expect(waited).toBeDefined()
    expect(ticks.filter((t) => t.status === "skipped").length).toBeGreaterThan(0)
    expect(overlapping(tasks)).toBe(false)
    const first = tasks.find((t) => t.id === ticks[0]!.task_id)
    const second = tasks.find((t) => t.id === waited!.task_id)
    expect(Date.parse(second.created_at)).toBeGreaterThanOrEqual(Date.parse(first.finished_at))
    expect(Date.parse(second.created_at) - Date.parse(first.finished_at)).toBeLessThan(2000)
  })

  it("buffer_one: a run waiting when the schedule is paused is skipped, not made on a resume days later", async () => {
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const created = await createSchedule(node, org.api_key, {
      agent_id: agentId,
      cron: "0 0 1 1 *",
      overlap: "buffer_one"
    })
    const waiting = new Date(Date.now() - 60_000)
    await withDatabase(node, (db) =>
      db.query(
        "INSERT INTO schedule_ticks (schedule_id, scheduled_for, kind, status) VALUES ($1, $2, 'scheduled', 'buffered')",
        [created.id, waiting]
      ))
    const paused = await call(node, org.api_key, "POST", `/v1/schedules/${created.id}/pause`)
    expect(paused.status, JSON.stringify(paused.body)).toBe(200)
    expect(paused.body.last_run).toMatchObject({ status: "skipped", reason: expect.stringContaining("paused") })
    expect(await ticksOf(node, created.id)).toMatchObject([{ scheduled_for: waiting, status: "skipped" }])
  })

  it("allow: every tick runs, alongside the previous", async () => {
    const { tasks, ticks } = await runFor("allow")
    expect(ticks.every((t) => t.status === "fired")).toBe(true)
    expect(tasks.length).toBeGreaterThanOrEqual(4)
    expect(overlapping(tasks)).toBe(true)
  })
})

describe("a schedule made or resumed on a node asleep for its poll interval", () => {
  let slow: TestNode
  beforeAll(async () => {
    // nothing is due on this node: without a wake-up, its scheduler would look again only after a minute
    slow = await startTestNode({ SWITCHYARD_SCHEDULE_POLL_INTERVAL: "60 seconds" })
  })
  afterAll(() => slow?.stop())

  it("runs at its first tick, and again right after a resume", async () => {
    const org = await slow.bootstrap()
    const agentId = await createScriptedAgent(slow, org.api_key)
    const created = await createSchedule(slow, org.api_key, { agent_id: agentId, cron: "* * * * * *" })
    await until(
      "a first run",
      async () => (await runsOf(slow, org.api_key, created.id)).length > 0 || undefined,
      15_000
    )
    const paused = await call(slow, org.api_key, "POST", `/v1/schedules/${created.id}/pause`)
    expect(paused.status).toBe(200)
    // the scheduler finds nothing due now, and sleeps its whole interval
    await new Promise((r) => setTimeout(r, 1500))
    const before = (await runsOf(slow, org.api_key, created.id)).length
    const resumed = await call(slow, org.api_key, "POST", `/v1/schedules/${created.id}/resume`)
    expect(resumed.status).toBe(200)
    await until(
      "a run after the resume",
      async () => (await runsOf(slow, org.api_key, created.id)).length > before || undefined,
      15_000
    )
  })
})
