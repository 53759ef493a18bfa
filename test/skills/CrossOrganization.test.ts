import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, expectError } from "../access/support.js"
import { publishedSkill, type SkillWorld, startSkillWorld, toolAgent } from "./support.js"

/** Organization A's skills, attachments, violations and approvals, seen from organization B's Super admin. */
describe("skills and approvals across organizations", () => {
  let w: SkillWorld
  beforeAll(async () => {
    w = await startSkillWorld()
  })
  afterAll(() => w?.stop())

  it("B can neither read nor change A's skills, attach them, read A's violations nor decide A's approvals", async () => {
    const skill = await publishedSkill(w, w.admin, {
      name: "A's guarded list",
      visibility: "organization",
      actions: [{ connection_id: w.connectionId, operation_id: "listPets", requires_approval: true }]
    })
    const agent = await toolAgent(w, w.admin, "listPets", {})
    await call(w.node, w.admin, "PUT", `/v1/agents/${agent.id}/skills/${skill.id}`)
    const accepted = await call(w.node, w.admin, "POST", `/v1/agents/${agent.id}/invoke?asynchronous=true`, {
      input: { text: "go", user: { id: "u", email: "u@example.com" } }
    })
    let approval: any
    for (let i = 0; i < 100 && approval === undefined; i++) {
      approval = (await call(w.node, w.admin, "GET", `/v1/approvals?task_id=${accepted.body.id}`)).body.items[0]
      if (approval === undefined) await new Promise((r) => setTimeout(r, 50))
    }
    expect(approval.status).toBe("pending")

    const b = (await w.node.bootstrap("Other organization")).api_key
    const bAgent = await toolAgent(w, b, "listPets", {})
    expectError(await call(w.node, b, "GET", `/v1/skills/${skill.id}`), 404, "not_found")
    expect((await call(w.node, b, "GET", "/v1/skills")).body.items).toEqual([])
    expectError(await call(w.node, b, "PATCH", `/v1/skills/${skill.id}`, { description: "mine" }), 404, "not_found")
    expectError(
      await call(w.node, b, "PUT", `/v1/skills/${skill.id}/access`, { visibility: "private" }),
      404,
      "not_found"
    )
    expectError(await call(w.node, b, "POST", `/v1/skills/${skill.id}/archive`), 404, "not_found")
    expectError(await call(w.node, b, "PUT", `/v1/agents/${bAgent.id}/skills/${skill.id}`), 404, "not_found")
    expectError(await call(w.node, b, "GET", `/v1/agents/${agent.id}/skills`), 404, "not_found")
    expect((await call(w.node, b, "GET", `/v1/skills/violations?skill_id=${skill.id}`)).body.items).toEqual([])
    expectError(await call(w.node, b, "GET", `/v1/approvals/${approval.id}`), 404, "not_found")
    expect((await call(w.node, b, "GET", "/v1/approvals")).body.items).toEqual([])
    expectError(await call(w.node, b, "POST", `/v1/approvals/${approval.id}/approve`, {}), 404, "not_found")
    // still A's to decide
    expect((await call(w.node, w.admin, "GET", `/v1/approvals/${approval.id}`)).body.status).toBe("pending")
    expect(w.target.requests.filter((r) => r.path === "/pets")).toHaveLength(0)
  })
})
