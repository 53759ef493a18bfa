import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, expectError } from "../access/support.js"
import { petstore } from "../connectors/support.js"
import { type SkillWorld, startSkillWorld } from "./support.js"

const manifest = (description = "Look pets up") =>
  `# switchyard.yaml
version: 1
connectors:
  - name: Vet API
    openapi: ./openapi/vet.json
skills:
  - name: Pet lookup
    description: ${description}
    visibility: organization
    actions:
      - connector: Pet Store
        connection: pets
        operation: getPet
      - connector: Pet Store
        connection: pets
        operation: listPets
        requires_approval: true
        approval_condition: { argument: query_params.limit, op: gt, value: 10 }
`

describe("publishing skills from switchyard.yaml", () => {
  let w: SkillWorld
  const files = {
    "./openapi/vet.json": JSON.stringify({
      ...petstore("https://vet.example.com"),
      info: { title: "Vet", version: "1" }
    })
  }
  beforeAll(async () => {
    w = await startSkillWorld()
  })
  afterAll(() => w?.stop())

  it("an admin's upload creates connectors and publishes skills; the same upload again changes nothing", async () => {
    const first = await call(w.node, w.admin, "POST", "/v1/skills/publish", { manifest: manifest(), files })
    expect(first.status).toBe(200)
    expect(first.body.connectors).toEqual([expect.objectContaining({ name: "Vet API", outcome: "created" })])
    expect(first.body.skills).toEqual([
      expect.objectContaining({ name: "Pet lookup", outcome: "created", status: "published", version: 1 })
    ])
    const skill = (await call(w.node, w.admin, "GET", `/v1/skills/${first.body.skills[0].id}`)).body
    expect(skill.actions).toHaveLength(2)
    expect(skill.actions[1]).toMatchObject({
      operation_id: "listPets",
      requires_approval: true,
      approval_condition: { argument: "query_params.limit", op: "gt", value: 10 }
    })
    const again = await call(w.node, w.admin, "POST", "/v1/skills/publish", { manifest: manifest(), files })
    expect(again.body.skills[0]).toMatchObject({ outcome: "unchanged", version: 1 })
    const changed = await call(w.node, w.admin, "POST", "/v1/skills/publish", { manifest: manifest("v2"), files })
    expect(changed.body.skills[0]).toMatchObject({ outcome: "updated", version: 2 })
  })

  it("a builder's upload makes drafts, and cannot change a published skill", async () => {
    const draft = manifest().replace("Pet lookup", "Builder lookup").replace(/connectors:[\s\S]*?skills:/, "skills:")
    const made = await call(w.node, w.owner.key, "POST", "/v1/skills/publish", { manifest: draft })
    expect(made.body.skills[0]).toMatchObject({ outcome: "created", status: "draft" })
    const hijack = manifest("mine now").replace(/connectors:[\s\S]*?skills:/, "skills:")
    const refused = await call(w.node, w.other.key, "POST", "/v1/skills/publish", { manifest: hijack })
    expectError(refused, 400, "invalid_manifest")
    expect(refused.body.error.details.problems[0]).toMatchObject({ field: "skills[0].name", line: 4 })
  })

  it("names the field and line of every problem", async () => {
    const bad = manifest().replace("visibility: organization", "visibility: everyone").replace(
      "operation: getPet",
      "operation: 7"
    )
    const answer = await call(w.node, w.admin, "POST", "/v1/skills/publish", { manifest: bad, files })
    expectError(answer, 400, "invalid_manifest")
    const problems = answer.body.error.details.problems
    expect(problems).toEqual(expect.arrayContaining([
      expect.objectContaining({ field: "skills[0].visibility", line: 9 }),
      expect.objectContaining({ field: "skills[0].actions[0].operation", line: 13 })
    ]))
    expect(answer.body.error.message).toContain("line 9")

    const missing = await call(w.node, w.admin, "POST", "/v1/skills/publish", { manifest: manifest() })
    expect(missing.body.error.details.problems[0]).toMatchObject({ field: "connectors[0].openapi", line: 5 })

    const syntax = await call(w.node, w.admin, "POST", "/v1/skills/publish", {
      manifest: "skills:\n  - name: [unclosed\n"
    })
    expectError(syntax, 400, "invalid_manifest")
    expect(syntax.body.error.details.problems[0].line).toBeGreaterThan(0)

    // aliases that cannot be resolved, or resolve to too much, are a bad manifest, not a 500
    const alias = await call(w.node, w.admin, "POST", "/v1/skills/publish", { manifest: "*7" })
    expectError(alias, 400, "invalid_manifest")
    expect(alias.body.error.details.problems[0].message).toContain("Unresolved alias")
    const bomb = [
      "a: &a [x,x,x,x,x,x,x,x,x]",
      "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]",
      "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]"
    ]
      .concat(["d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]", "e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]"]).join("\n")
    expectError(await call(w.node, w.admin, "POST", "/v1/skills/publish", { manifest: bomb }), 400, "invalid_manifest")

    const unknown = manifest().replace(
      "connection: pets\n        operation: getPet",
      "connection: cats\n        operation: getPet"
    )
    const noConnection = await call(w.node, w.admin, "POST", "/v1/skills/publish", { manifest: unknown, files })
    expect(noConnection.body.error.details.problems[0]).toMatchObject({
      field: "skills[0].actions[0].connection",
      line: 12
    })
  })
})
