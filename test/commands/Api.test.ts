import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, atOnce, auditEvents, call, expectError, orgKey, scriptedAgent } from "../access/support.js"
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
  const agent = (await call(node, org.api_key, "POST", "/v1/agents", scriptedAgent("Coder"))).body
  return { org, admin: org.api_key, agentId: agent.id as string }
}

const policyPath = (agentId: string) => `/v1/agents/${agentId}/command-policy`
const checkPath = (agentId: string) => `/v1/agents/${agentId}/commands/check`

describe("command policy REST API", () => {
  it("an agent without a policy denies every command, and says so", async () => {
    const { admin, agentId } = await world()
    const got = await call(node, admin, "GET", policyPath(agentId))
    expect(got.status).toBe(200)
    expect(got.body).toEqual({
      agent_id: agentId,
      default_action: "deny",
      rules: [],
      is_default: true,
      updated_at: null
    })
    const check = await call(node, admin, "POST", checkPath(agentId), { command: "ls" })
    expect(check.status).toBe(200)
    expect(check.body).toMatchObject({ decision: "deny", rule: null })
  })

  it("PUT replaces the policy, GET reads it back, and the change is audited with before and after", async () => {
    const { admin, agentId, org } = await world()
    const put = await call(node, admin, "PUT", policyPath(agentId), policy)
    expect(put.status, JSON.stringify(put.body)).toBe(200)
    expect(put.body).toMatchObject({ agent_id: agentId, ...policy, is_default: false })
    expect(put.body.updated_at).toMatch(/Z$/)
    expect((await call(node, admin, "GET", policyPath(agentId))).body).toEqual(put.body)

    const second = { default_action: "allow", rules: [{ pattern: "  rm   * ", action: "deny" }] }
    const replaced = await call(node, admin, "PUT", policyPath(agentId), second)
    expect(replaced.body.rules).toEqual([{ pattern: "rm *", action: "deny" }])

    const records = (await auditEvents(node, org.organization_id)).filter((e: any) =>
      e.action === "UPDATE_COMMAND_POLICY"
    )
    expect(records).toHaveLength(2)
    expect(records[0].targets).toEqual([{ type: "agent", id: agentId, name: "Coder" }])
    expect(records[0].details).toEqual({ before: null, after: policy })
    expect(records[1].details.before).toEqual(policy)
    expect(records[1].details.after).toEqual({ default_action: "allow", rules: [{ pattern: "rm *", action: "deny" }] })
  })

  it("a PUT of the policy held changes nothing: not written, not audited", async () => {
    const { admin, agentId, org } = await world()
    const put = await call(node, admin, "PUT", policyPath(agentId), policy)
    const before = await auditEvents(node, org.organization_id)
    // the same policy, its patterns spaced differently (they are stored normalized)
    const again = await call(node, admin, "PUT", policyPath(agentId), {
      ...policy,
      rules: policy.rules.map((r) => ({ ...r, pattern: ` ${r.pattern.replace(" ", "   ")} ` }))
    })
    expect(again.status, JSON.stringify(again.body)).toBe(200)
    expect(again.body).toEqual(put.body)
    expect(await auditEvents(node, org.organization_id)).toEqual(before)
  })

  it("PUTs at once apply one after the other, each recording the policy the other left as its before", async () => {
    const { admin, agentId, org } = await world()
    const first = { default_action: "deny", rules: [{ pattern: "ls", action: "allow" }] }
    const second = { default_action: "allow", rules: [] }
    const answers = await atOnce(node, "agents", agentId, [
      () => call(node, admin, "PUT", policyPath(agentId), first),
      () => call(node, admin, "PUT", policyPath(agentId), second)
    ])
    expect(answers.map((a) => a.status), JSON.stringify(answers.map((a) => a.body))).toEqual([200, 200])
    const records = (await auditEvents(node, org.organization_id)).filter((e: any) =>
      e.action === "UPDATE_COMMAND_POLICY"
    )
    expect(records.map((r: any) => r.details)).toEqual([
      { before: null, after: first },
      { before: first, after: second }
    ])
  })

  it("Builders and above change a policy; Members read it and check commands", async () => {
    const { admin, agentId } = await world()
    const member = await addMember(node, admin, "member")
    const builder = await addMember(node, admin, "builder")
    expectError(await call(node, member.key, "PUT", policyPath(agentId), policy), 403, "forbidden")
    expect((await call(node, builder.key, "PUT", policyPath(agentId), policy)).status).toBe(200)
    expect((await call(node, member.key, "GET", policyPath(agentId))).body.rules).toEqual(policy.rules)
    const check = await call(node, member.key, "POST", checkPath(agentId), { command: "git status" })
    expect(check.body).toMatchObject({ decision: "allow", rule: "git *" })
  })

  it("a key limited to other agents finds no such agent", async () => {
    const { admin, agentId } = await world()
    const other = (await call(node, admin, "POST", "/v1/agents", scriptedAgent("Other"))).body
    const limited = await call(node, admin, "POST", "/v1/api-keys", {
      name: "other only",
      kind: "organization",
      role: "builder",
      agent_ids: [other.id]
    })
    expect(limited.status, JSON.stringify(limited.body)).toBe(201)
    const key = limited.body.api_key
    expectError(await call(node, key, "GET", policyPath(agentId)), 404, "not_found")
    expectError(await call(node, key, "PUT", policyPath(agentId), policy), 404, "not_found")
    expectError(await call(node, key, "POST", checkPath(agentId), { command: "ls" }), 404, "not_found")
    expect((await call(node, key, "PUT", policyPath(other.id), policy)).status).toBe(200)
  })

  it("another organization's agent is not found, whatever the role", async () => {
    const a = await world()
    await call(node, a.admin, "PUT", policyPath(a.agentId), policy)
    const b = await node.bootstrap()
    const bOrgKey = await orgKey(node, b.api_key, "super_admin")
    for (const key of [b.api_key, bOrgKey.key]) {
      expectError(await call(node, key, "GET", policyPath(a.agentId)), 404, "not_found")
      expectError(
        await call(node, key, "PUT", policyPath(a.agentId), { default_action: "allow", rules: [] }),
        404,
        "not_found"
      )
      expectError(await call(node, key, "POST", checkPath(a.agentId), { command: "ls" }), 404, "not_found")
    }
    // the policy is as its organization left it
    expect((await call(node, a.admin, "GET", policyPath(a.agentId))).body.rules).toEqual(policy.rules)
  })

  it("bad input gets a 400 validation_failed naming the field", async () => {
    const { admin, agentId } = await world()
    const bad = async (body: unknown, path: string) => {
      const r = await call(node, admin, "PUT", policyPath(agentId), body)
      expectError(r, 400, "validation_failed")
      expect(JSON.stringify(r.body.error.details), JSON.stringify(r.body)).toContain(path)
      return r
    }
    await bad({ default_action: "maybe", rules: [] }, "default_action")
    // the path as the guide writes it: `rules.3.action`
    await bad({ default_action: "deny", rules: [{ pattern: "ls", action: "permit" }] }, "\"rules.0.action\"")
    await bad({ default_action: "deny", rules: [{ pattern: "", action: "allow" }] }, "\"rules.0.pattern\"")
    await bad({ default_action: "deny", rules: [{ pattern: "   ", action: "allow" }] }, "pattern")
    await bad({ default_action: "deny", rules: [{ pattern: "ls\nrm", action: "allow" }] }, "pattern")
    await bad({ default_action: "deny", rules: [{ pattern: "x".repeat(501), action: "allow" }] }, "pattern")
    await bad({
      default_action: "deny",
      rules: Array.from({ length: 201 }, () => ({ pattern: "ls", action: "allow" }))
    }, "rules")
    await bad({ rules: [] }, "default_action")

    const check = async (body: unknown, path: string) => {
      const r = await call(node, admin, "POST", checkPath(agentId), body)
      expectError(r, 400, "validation_failed")
      expect(JSON.stringify(r.body.error.details), JSON.stringify(r.body)).toContain(path)
    }
    await check({ command: "x".repeat(16_385) }, "command")
    await check({ command: "" }, "command")
    await check({}, "command")
    await check({ command: "ls", task_id: "not-a-task" }, "task_id")
    // the limits themselves are accepted
    expect((await call(node, admin, "POST", checkPath(agentId), { command: `echo ${"x".repeat(16_379)}` })).status)
      .toBe(200)
    // nothing was stored by the refused PUTs
    expect((await call(node, admin, "GET", policyPath(agentId))).body.is_default).toBe(true)
  })
})
