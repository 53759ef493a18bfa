import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createConnection, createConnector, json, petstore } from "../connectors/support.js"
import type { TargetServer } from "../support/TargetServer.js"
import type { TestNode } from "../support/TestNode.js"
import { createAgent, invokeAgent, startPetWorld, user, waitForTask } from "./support.js"

let node: TestNode
let target: TargetServer
let apiKey: string
let connection: any

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

let world: Awaited<ReturnType<typeof startPetWorld>>
beforeAll(async () => {
  world = await startPetWorld({
    SWITCHYARD_MODEL_PRICES: JSON.stringify({ scripted: { input: 1000, output: 2000 } })
  })
  ;({ apiKey, connection, node, target } = world)
})
afterAll(() => world?.stop())

const toolAgent = () =>
  createAgent(node, apiKey, {
    name: "Pet helper",
    instructions: "Help with pets.",
    model: {
      provider: "scripted",
      script: [
        { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "7" } } }] },
        { text: "Result: {{last_tool_result}}" }
      ]
    },
    skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
  })

describe("invoking an agent", () => {
  it("runs synchronously: model → tool → model, and returns the task (spec 4.6)", async () => {
    const agent = await toolAgent()
    const before = target.requests.length
    const response = await invokeAgent(node, apiKey, agent.id, "How is pet 7?")
    expect(response.status).toBe(200)
    const task = await response.json()
    expect(Object.keys(task)).toEqual(
      expect.arrayContaining(["id", "agent_id", "status", "result", "source", "created_at", "finished_at"])
    )
    expect(task).toMatchObject({ agent_id: agent.id, status: "completed", source: "api" })
    expect(task.created_at).toMatch(TIMESTAMP)
    expect(task.finished_at).toMatch(TIMESTAMP)
    expect(task.result).toContain("\"path\":\"/pets/7\"")
    expect(target.requests.length).toBe(before + 1)
    expect(target.requests[before]!.headers["x-api-key"]).toBe("k")
    // readable afterwards, with its thread and usage
    const read = await (await node.fetch(`/v1/tasks/${task.id}`, { apiKey })).json()
    expect(read).toEqual(task)
    const thread = await (await node.fetch(`/v1/tasks/${task.id}/thread`, { apiKey })).json()
    expect(thread.events.map((e: any) => e.type)).toEqual([
      "user_message",
      "model_call",
      "tool_call",
      "model_call",
      "agent_message"
    ])
    for (const e of thread.events) {
      expect(e.user).toEqual(user)
      expect(e.at).toMatch(TIMESTAMP)
    }
    const tool = thread.events[2].data
    expect(tool).toMatchObject({
      name: "getPet",
      arguments: { path_params: { petId: "7" } },
      status: 200,
      outcome: "ok",
      connection_id: connection.id
    })
    expect(thread.events[1].data.cost_usd).toBeGreaterThan(0)
    const usage = await (await node.fetch(`/v1/tasks/${task.id}/llm_usage`, { apiKey })).json()
    expect(usage.calls).toHaveLength(2)
    expect(usage.totals.calls).toBe(2)
    expect(usage.totals.cost_usd).toBeCloseTo(usage.calls[0].cost_usd + usage.calls[1].cost_usd, 10)
    expect(usage.totals.input_tokens).toBeGreaterThan(0)
  })

  it("runs asynchronously: 202 with the pending task, then polling shows it completed", async () => {
    const agent = await toolAgent()
    const response = await invokeAgent(node, apiKey, agent.id, "Pet 7?", { async: true })
    expect(response.status).toBe(202)
    const accepted = await response.json()
    expect(accepted).toMatchObject({ agent_id: agent.id, status: "pending", result: null, finished_at: null })
    const done = await waitForTask(node, apiKey, accepted.id)
    expect(done.status).toBe("completed")
    const listed = await (await node.fetch(`/v1/tasks?agent_id=${agent.id}&status=completed`, { apiKey })).json()
    expect(listed.items.map((t: any) => t.id)).toContain(accepted.id)
  })

  it("gives tasks time-ordered ids (UUIDv7): a later task's id sorts after an earlier one's", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "Quick",
      model: { provider: "scripted", script: [{ text: "done" }] }
    })
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const task = await (await invokeAgent(node, apiKey, agent.id, `Task ${i}`)).json()
      ids.push(task.id)
      // a millisecond apart: the order promised is the time's (one node also counts within a millisecond)
      await new Promise((r) => setTimeout(r, 2))
    }
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect([...ids].sort()).toEqual(ids)
  })

  it("requires the user's e-mail and the prompt, with clear 400s", async () => {
    const agent = await toolAgent()
    const noEmail = await invokeAgent(node, apiKey, agent.id, "", {
      body: { input: { text: "hi", user: { id: "u" } } }
    })
    expect(noEmail.status).toBe(400)
    const body = await noEmail.json()
    expect(body.error.details.issues.map((i: any) => i.path)).toContain("input.user.email")
    expect(body.error.message).toContain("email")
    expect(body.error.message).toContain("is required")
    const notAnEmail = await invokeAgent(node, apiKey, agent.id, "", {
      body: { input: { text: "hi", user: { id: "u", email: "notanemail" } } }
    })
    expect(notAnEmail.status).toBe(400)
    const refused = await notAnEmail.json()
    expect(refused.error.message).toContain("must be the user's e-mail address")
    expect(refused.error.message).not.toContain("is required")
    const noText = await invokeAgent(node, apiKey, agent.id, "", { body: { input: { user } } })
    expect(noText.status).toBe(400)
    expect((await invokeAgent(node, apiKey, crypto.randomUUID(), "hi")).status).toBe(404)
  })

  it("a call whose worst case does not fit a budget that is far from spent says so, and how to lower it", async () => {
    // a call's worst case here is about $0.0005 (scripted, $1000 and $2000 per million tokens): nothing fits
    const agent = await createAgent(node, apiKey, {
      name: "worst case",
      budget: { limit_usd: 0.0001, period: "day" },
      model: { provider: "scripted", script: [{ text: "never said" }] }
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(task.status).toBe("error")
    expect(task.result).toContain("worst case")
    expect(task.result).toContain("max_output_tokens")
    expect(task.result).not.toContain("is exhausted")
    const refused = await invokeAgent(node, apiKey, agent.id, "hi")
    expect(refused.status).toBe(402)
    const body = await refused.json()
    expect(body.error.code).toBe("budget_exhausted")
    expect(body.error.message).toContain("worst case")
    expect(body.error.details).toMatchObject({ limit_usd: 0.0001, spent_usd: 0 })
    // a smaller worst case (the model's max_output_tokens) is tried again at once
    const lowered = await node.fetch(`/v1/agents/${agent.id}`, {
      method: "PATCH",
      apiKey,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: { provider: "scripted", max_output_tokens: 1, script: [{ text: "x" }] } })
    })
    expect(lowered.status).toBe(200)
    expect((await invokeAgent(node, apiKey, agent.id, "hi")).status).not.toBe(402)
  })

  it("ends in error with the details when the model fails, and says what to configure", async () => {
    const agent = await createAgent(node, apiKey, { name: "no key", model: { provider: "openai" } })
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(task.status).toBe("error")
    expect(task.result).toContain("SWITCHYARD_OPENAI_API_KEY")
    expect(task.result).toContain("/v1/model-providers/openai")
  })

  it("reports tool errors to the model instead of failing", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "bad tool",
      model: {
        provider: "scripted",
        script: [{ tool_calls: [{ name: "getPet", arguments: {} }] }, { text: "saw: {{last_tool_result}}" }]
      },
      skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "?")).json()
    expect(task.status).toBe("completed")
    expect(task.result).toContain("path_params")
    const thread = await (await node.fetch(`/v1/tasks/${task.id}/thread`, { apiKey })).json()
    expect(thread.events[2].data.outcome).toBe("error")
  })

  it("stops at max_steps", async () => {
    const loopTurn = { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "1" } } }] }
    const agent = await createAgent(node, apiKey, {
      name: "loops",
      max_steps: 2,
      model: { provider: "scripted", script: [loopTurn, loopTurn, loopTurn] },
      skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "?")).json()
    expect(task.status).toBe("error")
    expect(task.result).toBe("Stopped after 2 model calls (max_steps) without a final answer.")
    expect(task.error_code).toBe("max_steps_exceeded")
    // the same on the task read again, and on its thread's end
    const read = await (await fetch(`${node.baseUrl}/v1/tasks/${task.id}`, { headers: { "x-api-key": apiKey } })).json()
    expect(read).toMatchObject({ status: "error", error_code: "max_steps_exceeded" })
    const thread =
      await (await fetch(`${node.baseUrl}/v1/tasks/${task.id}/thread`, { headers: { "x-api-key": apiKey } }))
        .json()
    expect(thread.events.at(-1)).toMatchObject({
      type: "error",
      data: { message: task.result, code: "max_steps_exceeded" }
    })
    const once = await createAgent(node, apiKey, {
      name: "loops once",
      max_steps: 1,
      model: { provider: "scripted", script: [loopTurn, loopTurn] },
      skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
    })
    const stopped = await (await invokeAgent(node, apiKey, once.id, "?")).json()
    expect(stopped.result).toBe("Stopped after 1 model call (max_steps) without a final answer.")
  })

  it("returns the same task for the same Idempotency-Key and body, 409 for another body", async () => {
    const agent = await toolAgent()
    const key = `idem-${Date.now()}`
    const first = await (await invokeAgent(node, apiKey, agent.id, "once", { headers: { "idempotency-key": key } }))
      .json()
    const again = await (await invokeAgent(node, apiKey, agent.id, "once", { headers: { "idempotency-key": key } }))
      .json()
    expect(again.id).toBe(first.id)
    expect(again.status).toBe("completed")
    const other = await invokeAgent(node, apiKey, agent.id, "different", { headers: { "idempotency-key": key } })
    expect(other.status).toBe(409)
    expect((await other.json()).error.code).toBe("idempotency_conflict")
  })

  it("makes one task of concurrent requests with one Idempotency-Key, sync and async alike", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "Once",
      model: { provider: "scripted", script: [{ text: "once" }] }
    })
    const key = `idem-concurrent-${Date.now()}`
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, n) =>
        invokeAgent(node, apiKey, agent.id, "same", {
          headers: { "idempotency-key": key },
          async: n % 2 === 0
        }).then(async (response) => ({ status: response.status, task: await response.json() })))
    )
    expect(answers.every((a) => a.status === 200 || a.status === 202)).toBe(true)
    expect(new Set(answers.map((a) => a.task.id)).size).toBe(1)
    const listed = await (await node.fetch(`/v1/tasks?agent_id=${agent.id}`, { apiKey })).json()
    expect(listed.items).toHaveLength(1)
    expect((await waitForTask(node, apiKey, answers[0]!.task.id)).status).toBe("completed")
  })
})

describe("agents", () => {
  it("refuses skills on unknown connections or operations", async () => {
    const bad = await node.fetch("/v1/agents", {
      ...json({
        name: "x",
        model: { provider: "scripted", script: [{ text: "hi" }] },
        skills: [{ connection_id: connection.id, operation_ids: ["nope"] }]
      }),
      apiKey
    })
    expect(bad.status).toBe(400)
    expect((await bad.json()).error.code).toBe("invalid_skill")
  })

  it("names the failing model field in details.issues, as every validation_failed does", async () => {
    const cases: Array<[unknown, string, string]> = [
      [{ provider: "openai-chat" }, "model.name", "is required for `openai-chat` (the model your server serves)."],
      [{ provider: "scripted" }, "model.script", "is required for a `scripted` model: a list of turns to play."],
      [{ provider: "openai", script: [{ text: "hi" }] }, "model.script", "is for the `scripted` provider only."],
      [{ provider: "openai", base_url: "ftp://models" }, "model.base_url", "must be an absolute http(s) URL."]
    ]
    for (const [model, path, message] of cases) {
      const refused = await node.fetch("/v1/agents", { ...json({ name: "x", model }), apiKey })
      expect(refused.status).toBe(400)
      const { error } = await refused.json()
      expect(error).toMatchObject({ code: "validation_failed", message: `\`${path}\`: ${message}` })
      expect(error.details).toEqual({ issues: [{ path, message }] })
    }
    const provider = await node.fetch("/v1/model-providers/openai-chat", {
      ...json({ base_url: "not a url" }),
      method: "PUT",
      apiKey
    })
    expect(provider.status).toBe(400)
    expect((await provider.json()).error.details).toEqual({
      issues: [{ path: "base_url", message: "must be an absolute http(s) URL." }]
    })
  })

  it("lists, reads, updates and deletes agents; other organizations see none of it", async () => {
    const agent = await toolAgent()
    const list = await (await node.fetch("/v1/agents", { apiKey })).json()
    expect(list.items.map((a: any) => a.id)).toContain(agent.id)
    const patched = await node.fetch(`/v1/agents/${agent.id}`, {
      ...json({ name: "Renamed" }),
      method: "PATCH",
      apiKey
    })
    expect((await patched.json()).name).toBe("Renamed")
    const other = (await node.bootstrap()).api_key
    expect((await node.fetch(`/v1/agents/${agent.id}`, { apiKey: other })).status).toBe(404)
    expect((await invokeAgent(node, other, agent.id, "hi")).status).toBe(404)
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect((await node.fetch(`/v1/tasks/${task.id}`, { apiKey: other })).status).toBe(404)
    expect((await node.fetch(`/v1/tasks/${task.id}/thread`, { apiKey: other })).status).toBe(404)
    expect((await node.fetch(`/v1/tasks/${task.id}/cancel`, { method: "POST", apiKey: other })).status).toBe(404)
    const otherTasks = await (await node.fetch("/v1/tasks", { apiKey: other })).json()
    expect(otherTasks.items).toEqual([])
    expect((await node.fetch(`/v1/agents/${agent.id}`, { method: "DELETE", apiKey })).status).toBe(204)
    expect((await node.fetch(`/v1/agents/${agent.id}`, { apiKey })).status).toBe(404)
  })

  it("limits an organization key to its agents", async () => {
    const allowed = await toolAgent()
    const hidden = await toolAgent()
    const key = await (await node.fetch("/v1/api-keys", {
      ...json({ name: "limited", kind: "organization", agent_ids: [allowed.id] }),
      apiKey
    })).json()
    const list = await (await node.fetch("/v1/agents", { apiKey: key.api_key })).json()
    expect(list.items.map((a: any) => a.id)).toEqual([allowed.id])
    expect((await invokeAgent(node, key.api_key, hidden.id, "hi")).status).toBe(404)
    expect((await invokeAgent(node, key.api_key, allowed.id, "hi")).status).toBe(200)
  })
})

describe("user_oidc_token", () => {
  it("is passed to tools that sign in as the user, never stored in plain text, and erased at the end", async () => {
    const oidcApi = petstore(target.url, {
      sso: { type: "openIdConnect", openIdConnectUrl: "https://idp.example.com/.well-known/openid-configuration" }
    })
    const connector = await createConnector(node, apiKey, oidcApi, { name: "As the user" })
    const asUser = await createConnection(node, apiKey, connector.id, {
      name: "as user",
      credentials: { type: "none" }
    })
    const agent = await createAgent(node, apiKey, {
      name: "on behalf",
      model: {
        provider: "scripted",
        script: [{ tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "me" } } }] }, { text: "ok" }]
      },
      skills: [{ connection_id: asUser.id, operation_ids: ["getPet"] }]
    })
    const token = `user-token-${Date.now()}`
    // a target that does not echo what it got (the echo server would put the token in the tool result)
    target.reply = (req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ authorized: req.headers.authorization === `Bearer ${token}` }))
    }
    const task = await (await invokeAgent(node, apiKey, agent.id, "?", {
      body: { input: { text: "?", user }, user_oidc_token: token }
    })).json()
    target.reply = (await import("../support/TargetServer.js")).echo
    expect(task.status).toBe("completed")
    expect(target.requests.at(-1)!.headers.authorization).toBe(`Bearer ${token}`)
    const pg = (await import("pg")).default
    const db = new pg.Client({ connectionString: node.databaseUrl })
    await db.connect()
    try {
      const { rows } = await db.query("SELECT oidc_token FROM tasks WHERE id = $1", [task.id])
      expect(rows[0].oidc_token).toBeNull()
      const dump = await db.query("SELECT t::text AS t FROM tasks t UNION ALL SELECT e::text FROM task_events e")
      expect(dump.rows.map((r: any) => r.t).join("\n")).not.toContain(token)
    } finally {
      await db.end()
    }
  })
})
