import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createConnection } from "../connectors/support.js"
import { createFunction } from "../functions/support.js"
import { until } from "../schedules/support.js"
import { type SkillWorld, startSkillWorld } from "../skills/support.js"
import { call, orgKey } from "./support.js"

/**
 * A personal connection is its owner's alone ("no one else sees or uses it"), also through an agent: a run
 * acts as the person who invoked it, never as the agent's creator, so invoking a Builder's agent does not
 * lend their credentials to a Member, an organization key, or a caller naming the owner in `input.user`.
 */
let w: SkillWorld
let personal: { id: string }
beforeAll(async () => {
  w = await startSkillWorld()
  const connectorId = (await call(w.node, w.admin, "GET", "/v1/tools?type=connector")).body.items
    .find((c: any) => c.name === "Pet Store").id
  personal = await createConnection(w.node, w.owner.key, connectorId, {
    name: "mine",
    access_scope: "personal",
    credentials: { type: "api_key", value: "OWNER-SECRET" }
  })
})
afterAll(() => w?.stop())

const invokeAs = (key: string, agentId: string, user = { id: "u", email: "u@example.com" }) =>
  call(w.node, key, "POST", `/v1/agents/${agentId}/invoke`, { input: { text: "go", user } })

/** The target's requests that carried the owner's secret, made while `f` ran. */
const ownerCallsDuring = async (f: () => Promise<unknown>) => {
  const before = w.target.requests.length
  await f()
  return w.target.requests.slice(before).filter((r) => r.headers["x-api-key"] === "OWNER-SECRET").length
}

describe("an agent holding its creator's personal connection", () => {
  let agentId: string
  beforeAll(async () => {
    const agent = await call(w.node, w.owner.key, "POST", "/v1/agents", {
      name: "Owner's pets",
      skills: [{ connection_id: personal.id, operation_ids: ["listPets"] }],
      model: {
        provider: "scripted",
        script: [{ tool_calls: [{ name: "listPets", arguments: {} }] }, { text: "got: {{last_tool_result}}" }]
      }
    })
    expect(agent.status).toBe(201)
    agentId = agent.body.id
  })

  it("calls with the owner's credentials when the owner invokes it", async () => {
    let task: any
    expect(await ownerCallsDuring(async () => (task = await invokeAs(w.owner.key, agentId)))).toBe(1)
    expect(task.body.status).toBe("completed")
  })

  it("calls with them in a run of a schedule the owner made (the claim's bulk path acts as its creator too)", async () => {
    const before = w.target.requests.length
    const schedule = await call(w.node, w.owner.key, "POST", "/v1/schedules", {
      name: "pets every second",
      agent_id: agentId,
      cron: "* * * * * *",
      input: { text: "go", user: { id: "u", email: "u@example.com" } }
    })
    expect(schedule.status, JSON.stringify(schedule.body)).toBe(201)
    const run = await until("a scheduled run that ended", async () => {
      const runs = (await call(w.node, w.owner.key, "GET", `/v1/tasks?schedule_id=${schedule.body.id}`)).body.items
      return runs.find((t: any) => t.status === "completed" || t.status === "error")
    })
    await call(w.node, w.owner.key, "POST", `/v1/schedules/${schedule.body.id}/pause`)
    expect(run.status, JSON.stringify(run)).toBe("completed")
    expect(w.target.requests.slice(before).some((r) => r.headers["x-api-key"] === "OWNER-SECRET")).toBe(true)
  })

  it("does not lend them to a Member, an organization key, or a caller naming the owner as its user", async () => {
    const orgWide = await orgKey(w.node, w.admin, "builder")
    const callers: Array<[string, string, { id: string; email: string } | undefined]> = [
      ["member", w.member.key, undefined],
      ["admin", w.admin, undefined],
      ["organization key", orgWide.key, undefined],
      ["member naming the owner", w.member.key, { id: w.owner.userId, email: w.owner.email }]
    ]
    for (const [who, key, user] of callers) {
      let task: any
      expect(await ownerCallsDuring(async () => (task = await invokeAs(key, agentId, user))), who).toBe(0)
      expect(task.body.status, who).toBe("error")
      expect(task.body.result, who).toContain(`connection ${personal.id} cannot be used`)
      expect(task.body.error_code, who).toBe("skill_unavailable")
    }
  })

  it("does not lend them to a function the agent runs either", async () => {
    const fn = await createFunction(
      w.node,
      w.admin,
      "export default async (input, ctx) => (await ctx.connectors.invoke(input.id, 'listPets', {})).status",
      { input_schema: { type: "object", required: ["id"], properties: { id: { type: "string" } } } }
    )
    const agent = (await call(w.node, w.owner.key, "POST", "/v1/agents", {
      name: "Owner's function",
      model: {
        provider: "scripted",
        script: [{ tool_calls: [{ name: fn.name, arguments: { id: personal.id } }] }, {
          text: "got: {{last_tool_result}}"
        }]
      }
    })).body
    expect((await call(w.node, w.owner.key, "PUT", `/v1/agents/${agent.id}/functions/${fn.id}`)).status).toBe(200)
    let task: any
    expect(await ownerCallsDuring(async () => (task = await invokeAs(w.member.key, agent.id)))).toBe(0)
    expect(task.body.result).toContain(`Connection '${personal.id}' not found`)
    expect(await ownerCallsDuring(async () => (task = await invokeAs(w.owner.key, agent.id)))).toBe(1)
    expect(task.body.result).toBe("got: 200")
  })
})
