import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, expectError } from "../access/support.js"
import { createFunction } from "../functions/support.js"
import { signedUpAdmin } from "../mcp/support.js"
import { publishedSkill, run, type SkillWorld, startSkillWorld, threadOf, waitStatus } from "./support.js"

const PAY = `export default async ({ amount }, ctx) => {
  ctx.log("paying", amount)
  return { paid: amount }
}`
const PAY_SCHEMA = { type: "object", required: ["amount"], properties: { amount: { type: "number" } } }

/** An agent whose scripted model calls each of `calls` in turn, then answers with the last result. */
const scriptedCaller = async (w: SkillWorld, calls: Array<{ name: string; arguments: unknown }>) => {
  const agent = await call(w.node, w.admin, "POST", "/v1/agents", {
    name: `caller ${Math.random()}`,
    model: {
      provider: "scripted",
      script: [...calls.map((c) => ({ tool_calls: [c] })), { text: "done: {{last_tool_result}}" }]
    }
  })
  expect(agent.status, JSON.stringify(agent.body)).toBe(201)
  return agent.body as { id: string }
}

describe("custom functions as skill actions", () => {
  let w: SkillWorld
  beforeAll(async () => {
    w = await startSkillWorld()
  })
  afterAll(() => w?.stop())

  it("a skill's function action is a tool, gated by its approval condition like a connector action", async () => {
    const fn = await createFunction(w.node, w.admin, PAY, { input_schema: PAY_SCHEMA, description: "Pays." })
    const skill = await publishedSkill(w, w.admin, {
      name: `payments ${Math.random()}`,
      visibility: "organization",
      actions: [
        {
          function_id: fn.id,
          requires_approval: true,
          approval_condition: { argument: "amount", op: "gt", value: 100 }
        },
        { connection_id: w.connectionId, operation_id: "getPet" }
      ]
    })
    expect(skill.actions[0]).toEqual({
      function_id: fn.id,
      requires_approval: true,
      approval_condition: { argument: "amount", op: "gt", value: 100 }
    })
    const agent = await scriptedCaller(w, [
      { name: fn.name, arguments: { amount: 5 } },
      { name: "getPet", arguments: { path_params: { petId: "3" } } },
      { name: fn.name, arguments: { amount: 500 } }
    ])
    expect((await call(w.node, w.admin, "PUT", `/v1/agents/${agent.id}/skills/${skill.id}`)).status).toBe(200)

    const accepted = (await call(w.node, w.admin, "POST", `/v1/agents/${agent.id}/invoke?asynchronous=true`, {
      input: { text: "pay", user: { id: "u", email: "u@example.com" } }
    })).body
    const waiting = await waitStatus(w, accepted.id, ["waiting_approval", "completed", "error"])
    expect(waiting.status, JSON.stringify(waiting)).toBe("waiting_approval")
    const pending = (await call(w.node, w.admin, "GET", `/v1/approvals?status=pending&task_id=${accepted.id}`)).body
    expect(pending.items).toMatchObject([{ tool: fn.name, arguments: { amount: 500 }, skill_id: skill.id }])
    const approved = await call(w.node, w.admin, "POST", `/v1/approvals/${pending.items[0].id}/approve`, {})
    expect(approved.status).toBe(200)

    const done = await waitStatus(w, accepted.id, ["completed", "error"])
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", result: `done: {"paid":500}` })
    const calls = (await threadOf(w, w.admin, accepted.id)).filter((e) => e.type === "tool_call").map((e) => e.data)
    expect(calls.map((c) => [c.name, c.outcome, c.function_id ?? null])).toEqual([
      [fn.name, "ok", fn.id],
      ["getPet", "ok", null],
      [fn.name, "ok", fn.id]
    ])
    expect(JSON.parse(calls[0].result)).toEqual({ paid: 5 })
  })

  it("an action naming a function that is not the organization's is refused, naming the action", async () => {
    const bad = await call(w.node, w.admin, "POST", "/v1/skills", {
      name: `missing ${Math.random()}`,
      actions: [{ connection_id: w.connectionId, operation_id: "getPet" }, {
        function_id: "00000000-0000-4000-8000-000000000000"
      }]
    })
    expectError(bad, 400, "invalid_skill")
    expect(bad.body.error.message).toContain("actions[1]")

    // another organization's function is as unknown as a missing one
    const stranger = await signedUpAdmin(w.node)
    const theirs = await createFunction(w.node, stranger.api_key, PAY)
    const cross = await call(w.node, w.admin, "POST", "/v1/skills", {
      name: `cross ${Math.random()}`,
      actions: [{ function_id: theirs.id }]
    })
    expectError(cross, 400, "invalid_skill")
  })

  it("a run whose skill names a function deleted since ends in error naming it", async () => {
    const fn = await createFunction(w.node, w.admin, PAY, { input_schema: PAY_SCHEMA })
    const skill = await publishedSkill(w, w.admin, {
      name: `gone ${Math.random()}`,
      visibility: "organization",
      actions: [{ function_id: fn.id }]
    })
    const agent = await scriptedCaller(w, [{ name: fn.name, arguments: { amount: 1 } }])
    await call(w.node, w.admin, "PUT", `/v1/agents/${agent.id}/skills/${skill.id}`)
    expect((await call(w.node, w.admin, "DELETE", `/v1/functions/${fn.id}`)).status).toBe(204)
    const task = (await run(w, w.admin, agent.id)).body
    expect(task.status).toBe("error")
    expect(task.result).toContain(`function ${fn.id}`)
  })

  it("switchyard.yaml names a function by its name; a function beside an operation is a problem", async () => {
    const fn = await createFunction(w.node, w.admin, PAY, { input_schema: PAY_SCHEMA })
    const manifest = (action: string) =>
      `skills:\n  - name: Manifest payments\n    visibility: organization\n    actions:\n${action}`
    const published = await call(w.node, w.admin, "POST", "/v1/skills/publish", {
      manifest: manifest(`      - function: ${fn.name}\n        requires_approval: true\n`)
    })
    expect(published.status, JSON.stringify(published.body)).toBe(200)
    const skill = (await call(w.node, w.admin, "GET", `/v1/skills/${published.body.skills[0].id}`)).body
    expect(skill.actions).toEqual([{ function_id: fn.id, requires_approval: true }])

    const both = await call(w.node, w.admin, "POST", "/v1/skills/publish", {
      manifest: manifest(
        `      - function: ${fn.name}\n        operation: getPet\n        connection: ${w.connectionId}\n`
      )
    })
    expectError(both, 400, "invalid_manifest")
    expect(both.body.error.details.problems).toMatchObject([{ field: "skills[0].actions[0]", line: 5 }])
    const unknown = await call(w.node, w.admin, "POST", "/v1/skills/publish", {
      manifest: manifest("      - function: no_such_function\n")
    })
    expectError(unknown, 400, "invalid_manifest")
    expect(unknown.body.error.message).toContain("no function 'no_such_function'")
    const neither = await call(w.node, w.admin, "POST", "/v1/skills/publish", {
      manifest: manifest("      - requires_approval: true\n")
    })
    expectError(neither, 400, "invalid_manifest")
  })
})
