import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call, expectError } from "../access/support.js"
import { publishedSkill, run, type SkillWorld, startSkillWorld, threadOf, toolAgent } from "./support.js"

describe("skills: lifecycle and who may do what", () => {
  let w: SkillWorld
  beforeAll(async () => {
    w = await startSkillWorld()
  })
  afterAll(() => w?.stop())

  it("a builder creates a draft, an admin publishes it; members and other builders cannot", async () => {
    const body = { name: "Pets lookup", actions: [{ connection_id: w.connectionId, operation_id: "getPet" }] }
    expectError(await call(w.node, w.member.key, "POST", "/v1/skills", body), 403, "forbidden")
    const created = await call(w.node, w.owner.key, "POST", "/v1/skills", body)
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ status: "draft", visibility: "private", version: 1, owner_id: w.owner.userId })
    expect(created.body.actions[0]).toMatchObject({ requires_approval: false })
    expectError(await call(w.node, w.owner.key, "POST", `/v1/skills/${created.body.id}/publish`), 403, "forbidden")
    const published = await call(w.node, w.admin, "POST", `/v1/skills/${created.body.id}/publish`)
    expect(published.body.status).toBe("published")
    // a private skill is invisible to others; only the owner and admins change who may use it
    const access = `/v1/skills/${created.body.id}/access`
    expectError(await call(w.node, w.other.key, "PUT", access, { visibility: "organization" }), 404, "not_found")
    const widened = await call(w.node, w.owner.key, "PUT", access, { visibility: "organization" })
    expect(widened.body.visibility).toBe("organization")
    // now in the catalog, seen by all, changed by none but the owner and admins
    expect((await call(w.node, w.other.key, "GET", `/v1/skills/${created.body.id}`)).status).toBe(200)
    expectError(await call(w.node, w.other.key, "PUT", access, { visibility: "private" }), 403, "forbidden")
    expectError(await call(w.node, w.member.key, "POST", `/v1/skills/${created.body.id}/archive`), 403, "forbidden")
    // a new version on each change of content
    const changed = await call(w.node, w.owner.key, "PATCH", `/v1/skills/${created.body.id}`, { description: "v2" })
    expect(changed.body).toMatchObject({ version: 2, description: "v2" })
    // and none when nothing changes: no version, no audit record
    for (const same of [{}, { description: "v2" }]) {
      const unchanged = await call(w.node, w.owner.key, "PATCH", `/v1/skills/${created.body.id}`, same)
      expect(unchanged.body).toMatchObject({ version: 2, description: "v2" })
    }
    const archived = await call(w.node, w.owner.key, "POST", `/v1/skills/${created.body.id}/archive`)
    expect(archived.body.status).toBe("archived")
    const actions = (await auditEvents(w.node, w.organizationId)).filter((e: any) =>
      e.targets?.some((t: any) => t.id === created.body.id)
    ).map((e: any) => e.action)
    for (const a of ["PUBLISH_SKILL", "UPDATE_SKILL_ACCESS", "UPDATE_SKILL", "ARCHIVE_SKILL"]) {
      expect(actions.filter((x: string) => x === a)).toHaveLength(1)
    }
  })

  it("refuses bad input with field-level 400s, and unknown ids with 404", async () => {
    const bad = await call(w.node, w.owner.key, "POST", "/v1/skills", {
      name: "",
      actions: [{ connection_id: "nope", operation_id: "getPet" }]
    })
    expectError(bad, 400, "validation_failed")
    const unknownOp = await call(w.node, w.owner.key, "POST", "/v1/skills", {
      name: "Broken",
      actions: [{ connection_id: w.connectionId, operation_id: "noSuchOperation" }]
    })
    expectError(unknownOp, 400, "invalid_skill")
    const unknownAgent = await call(w.node, w.owner.key, "POST", "/v1/skills", {
      name: "Scoped",
      visibility: "restricted",
      allowlist: ["00000000-0000-4000-8000-000000000000"],
      actions: [{ connection_id: w.connectionId, operation_id: "getPet" }]
    })
    expectError(unknownAgent, 400, "unknown_agent")
    const twice = { name: "Twice", actions: [{ connection_id: w.connectionId, operation_id: "getPet" }] }
    expect((await call(w.node, w.owner.key, "POST", "/v1/skills", twice)).status).toBe(201)
    expectError(
      await call(w.node, w.other.key, "POST", "/v1/skills", { ...twice, name: "twice" }),
      409,
      "skill_name_taken"
    )
    // ids are UUIDs at the contract: a malformed one is a 400, a well-formed unknown one a 404
    expectError(await call(w.node, w.owner.key, "GET", "/v1/skills/not-a-uuid"), 400, "validation_failed")
    expectError(
      await call(w.node, w.owner.key, "PUT", "/v1/agents/not-a-uuid/skills/not-a-uuid"),
      400,
      "validation_failed"
    )
    const unknown = "00000000-0000-4000-8000-000000000000"
    expectError(await call(w.node, w.owner.key, "GET", `/v1/skills/${unknown}`), 404, "not_found")
    expectError(await call(w.node, w.owner.key, "PUT", `/v1/agents/${unknown}/skills/${unknown}`), 404, "not_found")
  })

  it("lists the catalog, own skills and skills scoped to one's agents, and hides the rest", async () => {
    const agent = await toolAgent(w, w.other.key, "getPet", {}, "scoped agent")
    const catalog = await publishedSkill(w, w.owner.key, { name: "Catalog skill", visibility: "organization" })
    const scoped = await publishedSkill(w, w.owner.key, {
      name: "Scoped skill",
      visibility: "restricted",
      allowlist: [agent.id]
    })
    const hidden = await publishedSkill(w, w.owner.key, { name: "Owner only" })
    const seen = (await call(w.node, w.other.key, "GET", "/v1/skills?limit=200")).body.items.map((s: any) => s.id)
    expect(seen).toEqual(expect.arrayContaining([catalog.id, scoped.id]))
    expect(seen).not.toContain(hidden.id)
    expectError(await call(w.node, w.other.key, "GET", `/v1/skills/${hidden.id}`), 404, "not_found")
  })

  it("adding a skill answers when it was added, as the agent's list says, also when it was there already (recorded once)", async () => {
    const agent = await toolAgent(w, w.other.key, "getPet", {}, "twice")
    const skill = await publishedSkill(w, w.owner.key, { name: "Added twice", visibility: "organization" })
    const path = `/v1/agents/${agent.id}/skills/${skill.id}`
    const first = await call(w.node, w.other.key, "PUT", path)
    expect(first.status).toBe(200)
    const listed = () => call(w.node, w.other.key, "GET", `/v1/agents/${agent.id}/skills`).then((r) => r.body)
    expect((await listed()).map((a: any) => a.attached_at)).toEqual([first.body.attached_at])
    await new Promise((resolve) => setTimeout(resolve, 20))
    const again = await call(w.node, w.other.key, "PUT", path)
    expect(again.status).toBe(200)
    expect(again.body.attached_at).toBe(first.body.attached_at)
    expect((await listed()).map((a: any) => a.attached_at)).toEqual([first.body.attached_at])
    // the second PUT changed nothing, and is not recorded as an attach
    const attaches = (await auditEvents(w.node, w.organizationId)).filter((e: any) =>
      e.action === "ATTACH_SKILL" && e.targets.some((t: any) => t.id === agent.id)
    )
    expect(attaches).toHaveLength(1)
  })
})

/** The mode matrix: off / report / enforce × attach, list, run. */
describe.each(["off", "report", "enforce"] as const)("SERVICE_SKILL_VISIBILITY_MODE=%s", (mode) => {
  let w: SkillWorld
  beforeAll(async () => {
    w = await startSkillWorld({ SERVICE_SKILL_VISIBILITY_MODE: mode })
  })
  afterAll(() => w?.stop())

  it("attaching a skill outside its visibility is refused (enforce), recorded (report) or allowed (off)", async () => {
    // a private skill of one builder, and an agent of another: the visibility does not admit it (an admin,
    // who sees every skill, tries to add it)
    const skill = await publishedSkill(w, w.owner.key, { name: `private ${mode}` })
    const agent = await toolAgent(w, w.other.key, "getPet", { path_params: { petId: "7" } })
    const attached = await call(w.node, w.admin, "PUT", `/v1/agents/${agent.id}/skills/${skill.id}`)
    const violations = async () =>
      (await call(w.node, w.admin, "GET", `/v1/skills/violations?agent_id=${agent.id}`)).body.items
    if (mode === "enforce") {
      expectError(attached, 403, "skill_not_allowed")
      expect((await call(w.node, w.other.key, "GET", `/v1/agents/${agent.id}/skills`)).body).toEqual([])
      const denied = (await auditEvents(w.node, w.organizationId)).filter((e) =>
        e.action === "ATTACH_SKILL" && e.outcome === "denied"
      )
      expect(denied.map((e) => e.details)).toEqual([{ allowed: false, mode: "enforce" }])
      return
    }
    expect(attached.status).toBe(200)
    expect(attached.body.allowed).toBe(false)
    const listed = (await call(w.node, w.other.key, "GET", `/v1/agents/${agent.id}/skills`)).body
    expect(listed.map((a: any) => [a.skill.id, a.allowed])).toEqual([[skill.id, false]])
    // the run may use it; under report each use is recorded
    const task = await run(w, w.other.key, agent.id)
    expect(task.body.status).toBe("completed")
    expect(task.body.result).toContain("/pets/7")
    const recorded = await violations()
    expect(recorded.map((v: any) => v.kind).sort()).toEqual(mode === "report" ? ["attach", "use"] : [])
  })

  it("a scope change applies to the next run: under enforce a disallowed skill is neither listed nor callable", async () => {
    const agent = await toolAgent(w, w.other.key, "listPets", {}, "filtered")
    const skill = await publishedSkill(w, w.owner.key, {
      name: `scoped ${mode}`,
      visibility: "restricted",
      allowlist: [agent.id],
      actions: [{ connection_id: w.connectionId, operation_id: "listPets" }]
    })
    expect((await call(w.node, w.other.key, "PUT", `/v1/agents/${agent.id}/skills/${skill.id}`)).status).toBe(200)
    const before = w.target.requests.length
    expect((await run(w, w.other.key, agent.id)).body.status).toBe("completed")
    expect(w.target.requests.length).toBe(before + 1)
    // the owner narrows the scope: the agent is no longer on the allowlist
    await call(w.node, w.owner.key, "PUT", `/v1/skills/${skill.id}/access`, { visibility: "private" })
    const next = await run(w, w.other.key, agent.id)
    expect(next.body.status).toBe("completed")
    const events = await threadOf(w, w.other.key, next.body.id)
    const toolCall = events.find((e) => e.type === "tool_call")
    if (mode === "enforce") {
      expect(w.target.requests.length).toBe(before + 1)
      expect(toolCall.data.result).toContain("there is no tool named listPets")
    } else {
      expect(w.target.requests.length).toBe(before + 2)
      expect(toolCall.data.outcome).toBe("ok")
    }
  })
})
