import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, expectError, pageThrough, withDatabase } from "../access/support.js"
import { parseCsv } from "../support/Csv.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const exportAs = async (apiKey: string, query: string) => {
  const response = await node.fetch(`/v1/audit-logs/export?${query}`, { apiKey })
  return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
}

const TRICKY = "Ops, \"core\"\nteam"

describe("audit log export", () => {
  it("exports CSV with quoting, a JSON array and NDJSON, oldest first, the same records", async () => {
    const org = await node.bootstrap()
    expect((await call(node, org.api_key, "POST", "/v1/groups", { name: TRICKY, description: "a,b" })).status).toBe(201)
    expect((await call(node, org.api_key, "POST", "/v1/groups", { name: "Plain" })).status).toBe(201)

    const csv = await exportAs(org.api_key, "format=csv")
    expect(csv.status).toBe(200)
    expect(csv.type).toContain("text/csv")
    const [header, ...rows] = parseCsv(csv.text)
    expect(header).toContain("targets")
    expect(rows.map((r) => r[header!.indexOf("action")])).toEqual([
      "CREATE_ORGANIZATION",
      "CREATE_GROUP",
      "CREATE_GROUP"
    ])
    const targets = JSON.parse(rows[1]![header!.indexOf("targets")]!)
    expect(targets[0].name).toBe(TRICKY)

    const json = await exportAs(org.api_key, "format=json")
    expect(json.type).toContain("application/json")
    const events = JSON.parse(json.text)
    expect(events.map((e: any) => e.seq)).toEqual([1, 2, 3])
    expect(events[1].targets[0].name).toBe(TRICKY)
    expect(events[2].prev_hash).toBe(events[1].hash)
    expect(events[0].time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)

    const ndjson = await exportAs(org.api_key, "format=ndjson")
    expect(ndjson.type).toContain("application/x-ndjson")
    const lines = ndjson.text.trim().split("\n").map((l) => JSON.parse(l))
    expect(lines).toEqual(events)
    // the list endpoint shows the same records, newest first
    const listed = await call(node, org.api_key, "GET", "/v1/audit-logs")
    expect(listed.body.items).toEqual([...events].reverse())
  })

  it("neutralizes text a spreadsheet would run as a formula (CSV injection), and only in CSV", async () => {
    const org = await node.bootstrap()
    const evil = ["=HYPERLINK(\"http://evil.test\",\"x\")", "+1+1", "-2+3", "@SUM(A1)", "\tTAB"]
    await withDatabase(node, (db) =>
      db.query(
        `INSERT INTO audit_events (organization_id, seq, id, time, actor_type, actor_id, action, targets, outcome,
                                   prev_hash, hash)
         SELECT $1, 100 + n, gen_random_uuid(), now(), 'system', ($2::text[])[n], 'FORMULA', '[]', 'success', '', ''
         FROM generate_series(1, 5) AS n`,
        [org.organization_id, evil]
      ))
    const [header, ...rows] = parseCsv((await exportAs(org.api_key, "format=csv&event_type=FORMULA")).text)
    expect(rows.map((r) => r[header!.indexOf("actor_id")])).toEqual(evil.map((e) => `'${e}`))
    // the JSON export keeps the values as they are
    const json = JSON.parse((await exportAs(org.api_key, "format=json&event_type=FORMULA")).text)
    expect(json.map((e: any) => e.actor.id)).toEqual(evil)
  })

  it("exports an empty range as an empty array, and ranges far longer than a page", async () => {
    const org = await node.bootstrap()
    expect(JSON.parse((await exportAs(org.api_key, "format=json&event_type=NOTHING_LIKE_THIS")).text)).toEqual([])
    // many records, written directly (their chain is not under test here)
    await withDatabase(node, (db) =>
      db.query(
        `INSERT INTO audit_events (organization_id, seq, id, time, actor_type, actor_id, action, targets, outcome,
                                   prev_hash, hash)
         SELECT $1, 1 + n, gen_random_uuid(), now(), 'system', 'test', 'BULK', '[]', 'success', '', ''
         FROM generate_series(1, 1234) AS n`,
        [org.organization_id]
      ))
    const csv = parseCsv((await exportAs(org.api_key, "format=csv&event_type=BULK")).text)
    expect(csv.length).toBe(1 + 1234)
    const json = JSON.parse((await exportAs(org.api_key, "format=json&event_type=BULK")).text)
    expect(new Set(json.map((e: any) => e.seq)).size).toBe(1234)
  })

  it("filters by event type, actor and time, and pages with a cursor", async () => {
    const org = await node.bootstrap()
    // just after the bootstrap's record (a clock read at once may fall in its very millisecond)
    const [created] = (await call(node, org.api_key, "GET", "/v1/audit-logs")).body.items
    const t0 = new Date(new Date(created.time.slice(0, 23) + "Z").getTime() + 1)
    for (let i = 0; i < 5; i++) await call(node, org.api_key, "POST", "/v1/groups", { name: `G${i}` })
    const all = await call(node, org.api_key, "GET", "/v1/audit-logs?event_type=CREATE_GROUP")
    expect(all.body.items).toHaveLength(5)
    const byActor = await call(node, org.api_key, "GET", `/v1/audit-logs?actor=${org.user_id}`)
    expect(byActor.body.items).toHaveLength(5)
    const bySystem = await call(node, org.api_key, "GET", "/v1/audit-logs?actor=bootstrap")
    expect(bySystem.body.items.map((e: any) => e.action)).toEqual(["CREATE_ORGANIZATION"])
    const later = await call(node, org.api_key, "GET", `/v1/audit-logs?from=${t0.toISOString()}`)
    expect(later.body.items.every((e: any) => e.action === "CREATE_GROUP")).toBe(true)
    const none = await call(node, org.api_key, "GET", `/v1/audit-logs?to=2000-01-01T00:00:00Z`)
    expect(none.body.items).toEqual([])

    expect((await pageThrough(node, org.api_key, "/v1/audit-logs", 2, (e) => e.seq)).ids).toEqual([6, 5, 4, 3, 2, 1])
  })

  it("filters by target: one thing's whole history, in the list and the export", async () => {
    const org = await node.bootstrap()
    const group = (await call(node, org.api_key, "POST", "/v1/groups", { name: "Watched" })).body
    await call(node, org.api_key, "POST", "/v1/groups", { name: "Other" })
    await call(node, org.api_key, "PATCH", `/v1/groups/${group.id}`, { description: "changed" })
    await call(node, org.api_key, "DELETE", `/v1/groups/${group.id}`)
    const listed = await call(node, org.api_key, "GET", `/v1/audit-logs?target=${group.id}`)
    expect(listed.body.items.map((e: any) => e.action)).toEqual(["DELETE_GROUP", "UPDATE_GROUP", "CREATE_GROUP"])
    const exported = JSON.parse((await exportAs(org.api_key, `format=json&target=${group.id}`)).text)
    expect(exported.map((e: any) => e.action)).toEqual(["CREATE_GROUP", "UPDATE_GROUP", "DELETE_GROUP"])
    expect((await call(node, org.api_key, "GET", "/v1/audit-logs?target=nothing-like-this")).body.items).toEqual([])
    expectError(await call(node, org.api_key, "GET", "/v1/audit-logs?target="), 400, "validation_failed")
  })

  it("an export verifies offline by the documented recipe, and an edited or removed record shows", async () => {
    const org = await node.bootstrap()
    for (let i = 0; i < 3; i++) await call(node, org.api_key, "POST", "/v1/groups", { name: `V${i}` })
    // the guide's recipe, written apart from the server's: SHA-256 of the canonical JSON of all fields but `hash`
    const canonical = (v: unknown): string =>
      v === null || typeof v !== "object"
        ? JSON.stringify(v)
        : Array.isArray(v)
        ? `[${v.map(canonical).join(",")}]`
        : `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as any)[k])}`).join(",")}}`
    const firstBroken = (records: Array<any>) => {
      let prev = "0".repeat(64)
      for (const [i, { hash, ...rest }] of records.entries()) {
        const digest = Crypto.createHash("sha256").update(canonical(rest)).digest("hex")
        if (rest.seq !== i + 1 || rest.prev_hash !== prev || digest !== hash) return i + 1
        prev = hash
      }
      return null
    }
    const exported = JSON.parse((await exportAs(org.api_key, "format=json")).text)
    expect(exported).toHaveLength(4)
    expect(firstBroken(exported)).toBeNull()
    expect(firstBroken(exported.map((e: any) => e.seq === 3 ? { ...e, actor: { ...e.actor, id: "someone" } } : e)))
      .toBe(3)
    expect(firstBroken(exported.filter((e: any) => e.seq !== 2))).toBe(2)
  })

  it("answers bad parameters with 400", async () => {
    const org = await node.bootstrap()
    expectError(await call(node, org.api_key, "GET", "/v1/audit-logs?from=yesterday"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/audit-logs?limit=0"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/audit-logs?cursor=nope"), 400, "invalid_cursor")
    expectError(await call(node, org.api_key, "GET", "/v1/audit-logs?event_type=lower"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/audit-logs/export?format=xml"), 400, "validation_failed")
    // a range that ends before it starts is said to be one, as usage says it
    const backwards = "from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z"
    for (const path of ["/v1/audit-logs", "/v1/audit-logs/export"]) {
      expectError(await call(node, org.api_key, "GET", `${path}?${backwards}`), 400, "invalid_time_range")
    }
  })

  it("documents each export format as the body it is sent as", async () => {
    const document = await (await node.fetch("/openapi.json")).json()
    const ok = document.paths["/v1/audit-logs/export"].get.responses["200"]
    expect(Object.keys(ok.content).sort()).toEqual(["application/json", "application/x-ndjson", "text/csv"])
    expect(ok.content["application/json"].schema.type).toBe("array")
    expect(ok.content["application/json"].schema.items.$ref).toBe("#/components/schemas/AuditEvent")
    expect(ok.content["text/csv"].schema.description).toContain("id, seq, time")
    const org = await node.bootstrap()
    const header = (await exportAs(org.api_key, "format=csv")).text.split("\r\n")[0]!
    for (const column of header.split(",")) expect(ok.content["text/csv"].schema.description).toContain(column)
  })
})
