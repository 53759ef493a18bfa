import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { USAGE_CSV_COLUMNS } from "../../schema/Usage.js"
import { addMember, call, expectError, scriptedAgent, withDatabase } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { foldedByNode } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const alice = { id: "alice", email: "alice@example.com" }
const bob = { id: "bob", email: "bob@example.com" }

/** An organization whose agents ran: A twice for alice and once for a Member (as themselves), B once for bob. */
const usedOrganization = async () => {
  const org = await node.bootstrap()
  const admin = org.api_key
  const a = (await call(node, admin, "POST", "/v1/agents", {
    ...scriptedAgent("A"),
    budget: { limit_usd: 5, period: "month" }
  })).body
  const b = (await call(node, admin, "POST", "/v1/agents", scriptedAgent("B"))).body
  const member = await addMember(node, admin, "member")
  const invoke = async (key: string, agentId: string, user: { id: string; email: string }) => {
    const r = await call(node, key, "POST", `/v1/agents/${agentId}/invoke`, { input: { text: "hi", user } })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
  }
  await invoke(admin, a.id, alice)
  await invoke(admin, a.id, alice)
  await invoke(member.key, a.id, { id: member.userId, email: member.email })
  await invoke(admin, b.id, bob)
  // a direct connector call, outside any task, and one in alice's first task, recorded as the recorder does
  await withDatabase(node, (db) =>
    db.query(
      `INSERT INTO connector_invocations (organization_id, connector_id, connection_id, operation_id, user_id,
         task_id, status, duration_ms, request_bytes)
       VALUES ($1, $2, $3, 'listPets', $4, NULL, 200, 12, 0),
         ($1, $2, $3, 'listPets', $4, (SELECT id::text FROM tasks WHERE agent_id = $5 ORDER BY created_at LIMIT 1),
          503, 40, 0)`,
      [org.organization_id, Crypto.randomUUID(), Crypto.randomUUID(), org.user_id, a.id]
    ))
  // the node folds every second: wait until it folded all of it
  await withDatabase(node, (db) => foldedByNode(db))
  return { org, admin, a, b, member }
}

const usage = (key: string, query = "") => call(node, key, "GET", `/v1/usage${query}`)
const total = (rows: ReadonlyArray<any>, field: string) => rows.reduce((n, r) => n + r[field], 0)
const tasksOf = (rows: ReadonlyArray<any>) =>
  total(rows, "tasks_completed") + total(rows, "tasks_error") + total(rows, "tasks_cancelled")

describe("GET /v1/usage", () => {
  it("an Admin sees the organization's usage grouped by agent and user, equal to the recorded model calls", async () => {
    const { a, admin, b, member, org } = await usedOrganization()
    const r = await usage(admin, "?group_by=agent,user")
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body.bucket).toBe("day")
    expect(r.body.group_by).toEqual(["agent", "user"])
    const truth = await withDatabase(node, async (db) =>
      (await db.query(
        `SELECT u.agent_id::text AS agent_id, t.user_id, sum(u.input_tokens)::int AS input,
           sum(u.output_tokens)::int AS output, count(*)::int AS calls
         FROM llm_usage u JOIN tasks t ON t.id = u.task_id WHERE u.organization_id = $1
         GROUP BY 1, 2 ORDER BY 1, 2`,
        [org.organization_id]
      )).rows)
    expect(truth.length).toBe(3)
    for (const t of truth) {
      const rows = r.body.rows.filter((row: any) => row.agent_id === t.agent_id && row.user_id === t.user_id)
      expect({ input: total(rows, "input_tokens"), output: total(rows, "output_tokens") }).toEqual({
        input: t.input,
        output: t.output
      })
      expect(total(rows, "model_calls")).toBe(t.calls)
    }
    const of = (agentId: string, userId: string) =>
      r.body.rows.filter((row: any) => row.agent_id === agentId && row.user_id === userId)
    expect(tasksOf(of(a.id, "alice"))).toBe(2)
    expect(tasksOf(of(a.id, member.userId))).toBe(1)
    expect(tasksOf(of(b.id, "bob"))).toBe(1)
    expect(of(a.id, "alice")[0].task_duration_p50_ms).toBeGreaterThan(0)
    // connector calls: the one in alice's task under A and alice, the direct one under the caller and no agent
    expect(total(of(a.id, "alice"), "connector_calls_5xx")).toBe(1)
    expect(total(of(null as any, org.user_id), "connector_calls_2xx")).toBe(1)
    // the budget of A against its cap, as the agent shows it
    const agent = (await call(node, admin, "GET", `/v1/agents/${a.id}`)).body
    expect(r.body.budgets).toEqual([
      expect.objectContaining({ agent_id: a.id, period: "month", limit_usd: 5, spent_usd: agent.spent_usd })
    ])
  })

  it("a Member sees only the usage recorded under them, and may not ask for someone else's", async () => {
    const { member } = await usedOrganization()
    const own = await usage(member.key, "?group_by=user")
    expect(own.status, JSON.stringify(own.body)).toBe(200)
    expect(new Set(own.body.rows.map((row: any) => row.user_id))).toEqual(new Set([member.userId]))
    expect(tasksOf(own.body.rows)).toBe(1)
    expect((await usage(member.key, `?user_id=${member.userId}`)).status).toBe(200)
    expectError(await usage(member.key, "?user_id=alice"), 403, "forbidden")
  })

  it("a key limited to agents sees only those agents' usage; another agent is not found", async () => {
    const { a, admin, b } = await usedOrganization()
    const key = await call(node, admin, "POST", "/v1/api-keys", {
      name: "B only",
      kind: "organization",
      role: "admin",
      agent_ids: [b.id]
    })
    expect(key.status, JSON.stringify(key.body)).toBe(201)
    const r = await usage(key.body.api_key, "?group_by=agent")
    expect(r.status).toBe(200)
    expect(new Set(r.body.rows.map((row: any) => row.agent_id))).toEqual(new Set([b.id]))
    expect(tasksOf(r.body.rows)).toBe(1)
    expect(r.body.budgets).toEqual([])
    expectError(await usage(key.body.api_key, `?agent_id=${a.id}`), 404, "not_found")
  })

  it("another organization's usage is never seen", async () => {
    await usedOrganization()
    const other = await node.bootstrap()
    const r = await usage(other.api_key, "?group_by=agent,user,model,provider,connector,source")
    expect(r.status).toBe(200)
    expect(r.body.rows).toEqual([])
  })

  it("format=csv: a header row of the documented columns, then one row per bucket and group", async () => {
    const { admin } = await usedOrganization()
    const json = await usage(admin, "?group_by=agent")
    const r = await usage(admin, "?group_by=agent&format=csv")
    expect(r.status).toBe(200)
    expect(r.headers.get("content-type")).toMatch(/^text\/csv/)
    expect(r.headers.get("content-disposition")).toBe("attachment; filename=\"usage.csv\"")
    const lines = (r.body as string).trimEnd().split("\r\n")
    expect(lines[0]).toBe(USAGE_CSV_COLUMNS.join(","))
    expect(lines.length - 1).toBe(json.body.rows.length)
    const first = Object.fromEntries(lines[1]!.split(",").map((v, i) => [USAGE_CSV_COLUMNS[i], v]))
    expect(first.bucket_start).toBe(json.body.rows[0].bucket_start)
    expect(first.user_id).toBe("")
    expect(Number(first.input_tokens)).toBe(json.body.rows[0].input_tokens)
  })

  it("bad input is a 400 in the error envelope with a stable code", async () => {
    const org = await node.bootstrap()
    const key = org.api_key
    expectError(
      await usage(key, "?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z"),
      400,
      "invalid_time_range"
    )
    expectError(await usage(key, "?from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z"), 400, "invalid_time_range")
    expectError(await usage(key, "?bucket=hour&from=2026-01-01&to=2026-06-01"), 400, "invalid_time_range")
    expectError(await usage(key, "?group_by=agent,planet"), 400, "invalid_group_by")
    expectError(await usage(key, "?bucket=week"), 400, "validation_failed")
    expectError(await usage(key, "?from=not-a-date"), 400, "validation_failed")
    expectError(await usage(key, "?to=2026-13-45"), 400, "validation_failed")
    expectError(await usage(key, "?format=xml"), 400, "validation_failed")
    expectError(await usage(key, "?agent_id=nope"), 400, "validation_failed")
    // a day past its month's end is not read as the next month's
    expectError(await usage(key, "?from=2026-02-30&to=2026-03-02"), 400, "validation_failed")
    expectError(await usage(key, "?agent_id=0199a0b0-0000-7000-8000-000000000000"), 404, "not_found")
  })

  it("a date-time without a zone is UTC, whatever the node's own time zone", async () => {
    const org = await node.bootstrap()
    const zone = process.env["TZ"]
    process.env["TZ"] = "America/New_York"
    try {
      const r = await usage(org.api_key, "?from=2026-01-01T00:00:00&to=2026-01-02T06:30&bucket=hour")
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect({ from: r.body.from, to: r.body.to }).toEqual({
        from: "2026-01-01T00:00:00.000000Z",
        to: "2026-01-02T06:30:00.000000Z"
      })
      // an offset given is kept
      const offset = await usage(org.api_key, `?from=${encodeURIComponent("2026-01-01T00:00:00+02:00")}&to=2026-01-02`)
      expect(offset.body.from, JSON.stringify(offset.body)).toBe("2025-12-31T00:00:00.000000Z")
      // the audit log's bounds too: a record is after the UTC second before it, given without a zone
      const audit = await call(node, org.api_key, "GET", "/v1/audit-logs?event_type=CREATE_ORGANIZATION")
      const at = new Date(audit.body.items[0].time.slice(0, 23) + "Z")
      const since = new Date(at.getTime() - 1000).toISOString().slice(0, 19)
      const after = await call(node, org.api_key, "GET", `/v1/audit-logs?event_type=CREATE_ORGANIZATION&from=${since}`)
      expect(after.body.items).toHaveLength(1)
    } finally {
      if (zone === undefined) delete process.env["TZ"]
      else process.env["TZ"] = zone
    }
  })

  it("years 1–99 stay themselves: a month bucket from the year 50 starts in the year 50", async () => {
    const org = await node.bootstrap()
    const r = await usage(org.api_key, "?from=0050-06-15&to=0060-01-01&bucket=month")
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body.from).toBe("0050-06-01T00:00:00.000000Z")
    expectError(await usage(org.api_key, "?from=0060-06-15&to=0050-01-01&bucket=month"), 400, "invalid_time_range")
  })
})
