import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { atOnce, auditEvents, call, withDatabase } from "../access/support.js"
import { publishedSkill, type SkillWorld, startSkillWorld } from "./support.js"

let w: SkillWorld
beforeAll(async () => {
  w = await startSkillWorld()
})
afterAll(() => w?.stop())

const versionsOf = (skillId: string) =>
  withDatabase(
    w.node,
    async (db) =>
      (await db.query("SELECT version, name, description FROM skill_versions WHERE skill_id = $1 ORDER BY version", [
        skillId
      ])).rows
  )

describe("changes of a skill at once", () => {
  it("two PATCHes both hold, each a version of its own", async () => {
    const skill = await publishedSkill(w, w.owner.key, { name: "Before" })
    const [renamed, described] = await atOnce(w.node, "skills", skill.id, [
      () => call(w.node, w.admin, "PATCH", `/v1/skills/${skill.id}`, { name: "After" }),
      () => call(w.node, w.admin, "PATCH", `/v1/skills/${skill.id}`, { description: "Looks pets up" })
    ])
    expect([renamed.status, described.status], JSON.stringify([renamed.body, described.body])).toEqual([200, 200])
    const after = await call(w.node, w.admin, "GET", `/v1/skills/${skill.id}`)
    expect(after.body).toMatchObject({ name: "After", description: "Looks pets up", version: 3 })
    expect(await versionsOf(skill.id)).toEqual([
      expect.objectContaining({ version: 1, name: "Before" }),
      { version: 2, name: "After", description: "" },
      { version: 3, name: "After", description: "Looks pets up" }
    ])
  })

  it("a PATCH behind an archive finds it archived: 400, the archived skill unchanged", async () => {
    const skill = await publishedSkill(w, w.owner.key, { name: "Soon archived" })
    const [archived, changed] = await atOnce(w.node, "skills", skill.id, [
      () => call(w.node, w.admin, "POST", `/v1/skills/${skill.id}/archive`),
      () => call(w.node, w.admin, "PATCH", `/v1/skills/${skill.id}`, { description: "too late" })
    ])
    expect(archived.status).toBe(200)
    expect(changed.status, JSON.stringify(changed.body)).toBe(400)
    expect(changed.body.error.code).toBe("skill_archived")
    const after = await call(w.node, w.admin, "GET", `/v1/skills/${skill.id}`)
    expect(after.body).toMatchObject({ status: "archived", description: "", version: 1 })
  })

  it("a publish behind an archive finds it archived: it stays archived", async () => {
    const created = await call(w.node, w.owner.key, "POST", "/v1/skills", {
      name: "Draft to archive",
      actions: [{ connection_id: w.connectionId, operation_id: "getPet" }]
    })
    const id = created.body.id
    const [archived, published] = await atOnce(w.node, "skills", id, [
      () => call(w.node, w.admin, "POST", `/v1/skills/${id}/archive`),
      () => call(w.node, w.admin, "POST", `/v1/skills/${id}/publish`)
    ])
    expect(archived.status).toBe(200)
    expect(published.status, JSON.stringify(published.body)).toBe(400)
    expect(published.body.error.code).toBe("skill_archived")
    expect((await call(w.node, w.admin, "GET", `/v1/skills/${id}`)).body.status).toBe("archived")
  })
})

describe("a PUT of a skill's access", () => {
  it("of what it holds already changes nothing: not written, not audited", async () => {
    const agent = (await call(w.node, w.admin, "POST", "/v1/agents", {
      name: "Allowed",
      model: { provider: "scripted", script: [{ text: "hi" }] }
    })).body
    const skill = await publishedSkill(w, w.owner.key, { name: "Kept access" })
    const access = { visibility: "restricted", allowlist: [agent.id.toUpperCase()] }
    const set = await call(w.node, w.admin, "PUT", `/v1/skills/${skill.id}/access`, access)
    expect(set.status, JSON.stringify(set.body)).toBe(200)
    const before = await auditEvents(w.node, w.organizationId)
    const records = before.filter((e: any) => e.action === "UPDATE_SKILL_ACCESS" && e.targets[0].id === skill.id)
    // the ids as stored
    expect(records.map((e: any) => e.details.after)).toEqual([{ visibility: "restricted", allowlist: [agent.id] }])
    const again = await call(w.node, w.admin, "PUT", `/v1/skills/${skill.id}/access`, access)
    expect(again.status).toBe(200)
    expect(again.body).toEqual(set.body)
    expect(await auditEvents(w.node, w.organizationId)).toEqual(before)
  })
})
