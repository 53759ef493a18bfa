/**
 * Budgets against a real model server (OpenAI Chat Completions on 127.0.0.1) and a real node: what a server
 * reports cannot wedge an agent, a call is reserved at a true upper bound of its cost and priced by the
 * configured model, a burst does not lock the budget, and waiting for budget can be cancelled or timed out.
 */
import pg from "pg"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type ModelServer, startModelServer } from "../support/ModelServers.js"
import { type LogLine, startTestNode, type TestNode } from "../support/TestNode.js"
import { createAgent, invokeAgent, waitForTask } from "./support.js"

let node: TestNode
let server: ModelServer
let apiKey: string
const logs: Array<LogLine> = []

beforeAll(async () => {
  server = await startModelServer("openai-chat")
  node = await startTestNode({
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    SWITCHYARD_MODEL_PRICES: JSON.stringify({
      // output only: a call's worst case is its max_output_tokens' price, whatever its input
      "burst-model": { input: 0, output: 1.6 },
      // a call of 10 input tokens costs $600,000: two are more than a spend record holds
      "pricey-model": { input: 6e10, output: 0 },
      // a call of 10 input tokens costs $10,000,000: more than a call's record holds
      "unstorable-model": { input: 1e12, output: 0 }
    })
  }, { logs })
  ;({ api_key: apiKey } = await node.bootstrap())
})
// a test that failed may leave turns of its own
beforeEach(() => void (server.script.length = 0))
afterAll(async () => {
  await node?.stop()
  await server?.close()
})

const chatAgent = (name: string, extra: Record<string, unknown> = {}, model: Record<string, unknown> = {}) =>
  createAgent(node, apiKey, {
    name,
    model: { provider: "openai-chat", name, base_url: server.url, ...model },
    ...extra
  })

const agentOf = async (id: string) => (await node.fetch(`/v1/agents/${id}`, { apiKey })).json()
const usageOf = async (taskId: string) => (await node.fetch(`/v1/tasks/${taskId}/llm_usage`, { apiKey })).json()
const defects = () => logs.filter((l) => String(l.message).includes("Defect in entity"))

/** A whole (non-streamed) Chat Completions answer, as a server that reports another model sends it. */
const answerFrom = (model: string, usage: { prompt_tokens: number; completion_tokens: number }) =>
  JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
    usage
  })

describe("a budget on a model without a price", () => {
  it("is refused (its calls would cost nothing, so it could never stop one), on create and on a change", async () => {
    const post = await node.fetch("/v1/agents", {
      method: "POST",
      apiKey,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        name: "unpriced",
        model: { provider: "openai-chat", name: "unpriced-model", base_url: server.url },
        budget: { limit_usd: 5 }
      })
    })
    expect(post.status).toBe(400)
    const body = await post.json()
    expect(body.error.details.issues[0].path).toBe("budget")
    expect(body.error.details.issues[0].message).toContain("'unpriced-model' has no price")
    expect(body.error.details.issues[0].message).toContain("SWITCHYARD_MODEL_PRICES")

    const agent = await chatAgent("unpriced-model")
    const patch = (change: unknown) =>
      node.fetch(`/v1/agents/${agent.id}`, {
        method: "PATCH",
        apiKey,
        headers: { "content-type": "application/json" },
        body: JSON.stringify(change)
      })
    expect((await patch({ budget: { limit_usd: 5 } })).status).toBe(400)
    // a priced model takes it, and a change to an unpriced one then is refused while the budget stays
    const priced = await patch({
      model: { provider: "openai-chat", name: "burst-model", base_url: server.url },
      budget: { limit_usd: 5 }
    })
    expect(priced.status).toBe(200)
    const back = await patch({ model: { provider: "openai-chat", name: "unpriced-model", base_url: server.url } })
    expect(back.status).toBe(400)
    expect((await patch({ budget: null })).status).toBe(200)
  })
})

describe("usage a model server reports", () => {
  it("an implausible token count fails that call with model_bad_usage, and the agent goes on", async () => {
    const agent = await chatAgent("gpt-4.1-nano", { budget: { limit_usd: 1, period: "day" } })
    server.script.push(
      { text: "bogus", usage: { input: 1e308, output: 1e308 } },
      { text: "half a token", usage: { input: 12.5, output: 1 } },
      { text: "fixed", usage: { input: 10, output: 5 } }
    )
    const bogus = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(bogus.status).toBe("error")
    expect(bogus.result).toContain("model_bad_usage")
    expect(bogus.result).toContain("prompt_tokens = 1e+308")
    const half = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(half.status).toBe("error")
    expect(half.result).toContain("prompt_tokens = 12.5")
    // the error is the task's record of the call: no usage was counted for it
    expect((await usageOf(bogus.id)).totals).toMatchObject({ calls: 0, cost_usd: 0 })
    // the server fixed: the agent's next task runs, and its spend is the one sane call's
    const fixed = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(fixed).toMatchObject({ status: "completed", result: "fixed" })
    const spent = (await agentOf(agent.id)).spent_usd
    expect(spent).toBeCloseTo((10 * 0.1 + 5 * 0.4) / 1e6, 12)
    expect(defects()).toEqual([])
  })

  it("a cost the records cannot hold fails the call; a spend past what the agent's record holds saturates", async () => {
    const unstorable = await chatAgent("unstorable-model")
    server.script.push({ text: "priceless", usage: { input: 10, output: 0 } })
    const refused = await (await invokeAgent(node, apiKey, unstorable.id, "hi")).json()
    expect(refused.status).toBe("error")
    expect(refused.result).toContain("model_bad_usage")
    expect(refused.result).toContain("SWITCHYARD_MODEL_PRICES")

    // $600,000 a call: the second takes the period's spend past the record's $999,999.99999999
    const pricey = await chatAgent("pricey-model", { budget: { limit_usd: 1e9, period: "total" } }, {
      max_output_tokens: 1
    })
    for (let i = 0; i < 3; i++) {
      server.script.push({ text: `call ${i}`, usage: { input: 10, output: 0 } })
      const task = await (await invokeAgent(node, apiKey, pricey.id, "hi")).json()
      expect(task).toMatchObject({ status: "completed", result: `call ${i}` })
    }
    expect((await agentOf(pricey.id)).spent_usd).toBeCloseTo(999_999.99999999, 4)
    expect(defects()).toEqual([])
  })
})

describe("a call's worst case", () => {
  it("bounds a prompt of CJK text (3 bytes, about 1.3 tokens a character): one call never passes the cap", async () => {
    const text = "漢".repeat(3_000)
    const agent = await chatAgent("gpt-4.1", { budget: { limit_usd: 0.005, period: "total" } }, {
      max_output_tokens: 10
    })
    const before = server.requests.length
    server.script.push({ text: "ok", usage: { input: 4_000, output: 10 } })
    const task = await (await invokeAgent(node, apiKey, agent.id, text)).json()
    expect(task.status).toBe("error")
    expect(task.result).toContain("worst case")
    expect(task.error_code).toBe("budget_exhausted")
    expect(server.requests.length).toBe(before)
    expect((await agentOf(agent.id)).spent_usd).toBeLessThanOrEqual(0.005)
  })

  it("leaves room for calls under a budget that has plenty", async () => {
    const agent = await chatAgent("gpt-4.1-mini", { budget: { limit_usd: 0.05, period: "total" } })
    for (let i = 0; i < 3; i++) {
      server.script.push({ text: `answer ${i}`, usage: { input: 1_500, output: 200 } })
      const task = await (await invokeAgent(node, apiKey, agent.id, "What is the weather like in Paris?")).json()
      expect(task).toMatchObject({ status: "completed", result: `answer ${i}` })
    }
  })

  it("is what a budgeted call without max_output_tokens may answer: it is sent that limit", async () => {
    const budgeted = await chatAgent("gpt-4.1-mini", { budget: { limit_usd: 1, period: "total" } })
    const free = await chatAgent("gpt-4.1-mini")
    for (const agent of [budgeted, free]) {
      server.script.push({ text: "ok", usage: { input: 10, output: 2 } })
      expect((await (await invokeAgent(node, apiKey, agent.id, "hello")).json()).status).toBe("completed")
    }
    const [withBudget, without] = server.requests.slice(-2).map((r) => r.body)
    expect(withBudget.max_tokens).toBe(4096)
    expect(without.max_tokens).toBeUndefined()
  })
})

describe("pricing a call", () => {
  const priced = async (configured: string, reported: string) => {
    const agent = await chatAgent(configured, { budget: { limit_usd: 1, period: "total" } })
    server.script.push({ raw: answerFrom(reported, { prompt_tokens: 1_000, completion_tokens: 1_000 }) })
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(task.status).toBe("completed")
    const usage = await usageOf(task.id)
    expect(usage.calls[0].model).toBe(reported)
    return usage.totals.cost_usd
  }

  it("is at the configured model's price, or the reported model's when that is known and higher", async () => {
    // a server reporting a model the price table does not know: the configured model's price, not $0
    expect(await priced("gpt-4.1-nano", "some-local-model")).toBeCloseTo((1_000 * 0.1 + 1_000 * 0.4) / 1e6, 10)
    // reporting a cheaper model than configured: the configured model's price, which was reserved
    expect(await priced("gpt-4.1", "gpt-4.1-nano-2025-04-14")).toBeCloseTo((1_000 * 2 + 1_000 * 8) / 1e6, 10)
    // reporting a pricier model: what it spent
    expect(await priced("gpt-4.1-nano", "claude-opus-4-1")).toBeCloseTo((1_000 * 15 + 1_000 * 75) / 1e6, 10)
  })

  it("adds a task's calls to the total the agent's spend records, with no float noise", async () => {
    // $0.10 and $0.20 at $1.60 a million output tokens: added as floats, 0.30000000000000004
    const agent = await chatAgent("burst-model")
    server.script.push(
      { tool_calls: [{ name: "no_such_tool", arguments: {} }], usage: { input: 0, output: 62_500 } },
      { text: "ok", usage: { input: 0, output: 125_000 } }
    )
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(task.status).toBe("completed")
    const usage = await usageOf(task.id)
    expect(usage.calls.map((c: any) => c.cost_usd)).toEqual([0.1, 0.2])
    expect(usage.totals.cost_usd).toBe(0.3)
  })
})

describe("a burst of calls", () => {
  it("spends the budget as far as it goes, and only then is the agent refused with 402", async () => {
    // a call's worst case is $0.00096 (600 tokens of output), and it costs half that: while calls are in flight
    // they hold more than they spend, and the calls waiting for it get it once they end. 19 fit in $0.01 (the
    // 19th reserved at $0.00864 spent), a 20th does not (with 19 spent, $0.00088 is left)
    const agent = await chatAgent("burst-model", { budget: { limit_usd: 0.01, period: "day" } }, {
      max_output_tokens: 600
    })
    // each answer takes a moment, as a real one does: the calls overlap
    for (let i = 0; i < 40; i++) server.script.push({ text: "ok", usage: { input: 50, output: 300 }, delay_ms: 200 })
    const responses = await Promise.all(Array.from({ length: 40 }, () => invokeAgent(node, apiKey, agent.id, "go")))
    const bodies = await Promise.all(responses.map((r) => r.json()))
    const completed = bodies.filter((b) => b.status === "completed")
    expect(completed).toHaveLength(19)
    for (const [i, r] of responses.entries()) {
      if (r.status === 402) expect(bodies[i].error.code).toBe("budget_exhausted")
      else if (bodies[i].status !== "completed") expect(bodies[i].result).toContain("budget")
    }
    const spent = (await agentOf(agent.id)).spent_usd
    expect(spent).toBeCloseTo(19 * 300 * 1.6 / 1e6, 10)
    // refused now because the spend leaves less than a call's worst case, not because of calls that were in flight
    const again = await invokeAgent(node, apiKey, agent.id, "go")
    expect(again.status).toBe(402)
    expect(0.01 - spent).toBeLessThan(600 * 1.6 / 1e6)
  })
})

describe("waiting for the Agent entity", () => {
  it("a cancel and the time limit stop a task whose call waits for its budget", async () => {
    // the entity's writes of spend wait on this lock: a refused call's request waits with them
    const db = new pg.Client({ connectionString: node.databaseUrl })
    await db.connect()
    try {
      await db.query("BEGIN")
      await db.query("LOCK TABLE agent_spend IN EXCLUSIVE MODE")
      const agent = await chatAgent("gpt-4.1-nano", { budget: { limit_usd: 1e-9, period: "total" } })
      const sync = invokeAgent(node, apiKey, agent.id, "wait")
      let taskId: string | undefined
      while (taskId === undefined) {
        const listed = await (await node.fetch(`/v1/tasks?agent_id=${agent.id}`, { apiKey })).json()
        taskId = listed.items[0]?.id
        await new Promise((r) => setTimeout(r, 20))
      }
      expect((await node.fetch(`/v1/tasks/${taskId}/cancel`, { method: "POST", apiKey })).status).toBe(200)
      // the synchronous invoke answers with the task's end
      expect(await (await sync).json()).toMatchObject({ id: taskId, status: "cancelled" })

      const limited = await chatAgent("gpt-4.1-nano", {
        budget: { limit_usd: 1e-9, period: "total" },
        timeout_seconds: 1
      })
      const accepted = await (await invokeAgent(node, apiKey, limited.id, "wait", { async: true })).json()
      const ended = await waitForTask(node, apiKey, accepted.id)
      expect(ended.status).toBe("error")
      expect(ended.result).toContain("longer than")
    } finally {
      await db.query("ROLLBACK")
      await db.end()
    }
    expect(server.requests.filter((r) => JSON.stringify(r.body).includes("wait"))).toEqual([])
  })
})
