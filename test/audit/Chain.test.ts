import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, withDatabase } from "../access/support.js"
import { runCli } from "../support/NodeProcess.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const verify = (organizationId: string, json = true) =>
  runCli(["audit", "verify", "--organization", organizationId, ...(json ? ["--json"] : [])], {
    DATABASE_URL: node.databaseUrl,
    SWITCHYARD_SECRET_KEY: Buffer.alloc(32, 7).toString("base64")
  })

/** An organization with a few records: bootstrap, then five groups. */
const orgWithRecords = async () => {
  const org = await node.bootstrap()
  for (let i = 0; i < 5; i++) {
    expect((await call(node, org.api_key, "POST", "/v1/groups", { name: `G${i}` })).status).toBe(201)
  }
  return org
}

const tamper = (sql: string, organizationId: string) => withDatabase(node, (db) => db.query(sql, [organizationId]))

// each CLI run starts a process (seconds): one run checks every tampered organization at once
describe("switchyard audit verify", () => {
  it("passes an intact chain", async () => {
    const org = await orgWithRecords()
    const result = await verify(org.organization_id)
    expect(result.code, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual([{ organization_id: org.organization_id, records: 6 }])
  })

  it("reports the first broken record of each tampered chain, exit code 1", async () => {
    const intact = await orgWithRecords()
    const changed = await orgWithRecords()
    await tamper(
      `UPDATE audit_events SET targets = '[{"type":"group","id":"x","name":"innocent"}]'
       WHERE organization_id = $1 AND seq = 3`,
      changed.organization_id
    )
    // a forger who rewrites a record's hash still breaks the link to it
    const rehashed = await orgWithRecords()
    await tamper(
      "UPDATE audit_events SET hash = repeat('a', 64) WHERE organization_id = $1 AND seq = 2",
      rehashed.organization_id
    )
    const gap = await orgWithRecords()
    await tamper("DELETE FROM audit_events WHERE organization_id = $1 AND seq = 4", gap.organization_id)
    const truncated = await orgWithRecords()
    await tamper("DELETE FROM audit_events WHERE organization_id = $1 AND seq >= 5", truncated.organization_id)
    // the newest record removed with the head that remembers it
    const headless = await orgWithRecords()
    await tamper("DELETE FROM audit_chain_heads WHERE organization_id = $1", headless.organization_id)
    await tamper("DELETE FROM audit_events WHERE organization_id = $1 AND seq = 6", headless.organization_id)
    // a chain whose head is behind refuses a new record instead of forking
    const refused = await call(node, headless.api_key, "POST", "/v1/groups", { name: "after" })
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 500, code: "internal_error" })

    const result = await runCli(["audit", "verify"], {
      DATABASE_URL: node.databaseUrl,
      SWITCHYARD_SECRET_KEY: Buffer.alloc(32, 7).toString("base64")
    })
    expect(result.code).toBe(1)
    const line = (org: { organization_id: string }) =>
      result.stdout.split("\n").find((l) => l.includes(org.organization_id)) ?? ""
    expect(line(intact)).toMatch(/^ok .*6 record\(s\), chain intact/)
    expect(line(changed)).toMatch(/^BROKEN .*#3 \(.*\): .*changed/)
    expect(line(rehashed)).toMatch(/^BROKEN .*#2 /)
    expect(line(gap)).toMatch(/^BROKEN .*#4: .*missing/)
    expect(line(truncated)).toMatch(/^BROKEN .*#5: .*removed/)
    expect(line(headless)).toMatch(/^BROKEN .*#5: .*head is missing/)
  })

  it("fails for an unknown organization", async () => {
    const result = await verify("00000000-0000-0000-0000-000000000000", false)
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("No organization")
  })
})
