import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bootstrapOrg } from "../support/Bootstrap.js"
import { type NodeProcess, spawnNode } from "../support/NodeProcess.js"
import { eventually } from "../support/Poll.js"
import { freePort } from "../support/ports.js"
import { migratedDatabase } from "../support/TestDatabase.js"
import { testEnvironment } from "../support/TestNode.js"

/**
 * Three nodes under load. Where a task runs is seen from outside: each node prices the scripted model
 * differently (SWITCHYARD_MODEL_PRICES), so the cost of a task's model call says which node made it.
 */
const NODES = 3
const PRICE = (i: number) => (i + 1) * 1_000 // USD per million tokens: node i's calls cost (i + 1) times node 0's

let nodes: Array<NodeProcess> = []
let shared: Record<string, string>
let headers: Record<string, string>

beforeAll(async () => {
  shared = await testEnvironment({ DATABASE_URL: await migratedDatabase() })
  const env = async (i: number) => ({
    ...shared,
    ...(i === 0
      ? {}
      : { SWITCHYARD_HTTP_PORT: String(await freePort()), SWITCHYARD_RUNNER_PORT: String(await freePort()) }),
    SWITCHYARD_MODEL_PRICES: JSON.stringify({ scripted: { input: PRICE(i), output: PRICE(i) } })
  })
  nodes = await Promise.all(Array.from({ length: NODES }, async (_, i) => spawnNode(await env(i))))
  // the organization is made while the nodes start
  const created = bootstrapOrg(shared, "Placement", "placement@nodes.test")
  await Promise.all(nodes.map((n) => n.waitReady()))
  // every node holds shards before the load starts
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    const owned = await Promise.all(
      nodes.map((n) => fetch(`${n.baseUrl}/readyz`).then((r) => r.json()).then((r) => r.shards_owned ?? 0))
    )
    if (owned.every((o) => o > 0) && owned.reduce((a, b) => a + b, 0) === 300) break
    await new Promise((r) => setTimeout(r, 250))
  }
  headers = { "x-api-key": (await created).api_key, "content-type": "application/json" }
}, 120_000)

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
})

const post = (node: NodeProcess, path: string, body: unknown) =>
  fetch(`${node.baseUrl}${path}`, { method: "POST", headers, body: JSON.stringify(body) }).then(async (r) => ({
    status: r.status,
    body: await r.json()
  }))
const get = (node: NodeProcess, path: string) => fetch(`${node.baseUrl}${path}`, { headers }).then((r) => r.json())

const agent = async (body: Record<string, unknown>) => {
  const created = await post(nodes[0]!, "/v1/agents", body)
  expect(created.status).toBe(201)
  return created.body.id as string
}

/** The node that made the task's model call, from what the call cost against what it cost node 0. */
const ranOn = async (taskId: string, unit: number) => {
  const usage = await get(nodes[0]!, `/v1/tasks/${taskId}/llm_usage`)
  const ratio = usage.totals.cost_usd / unit
  return Math.round(ratio) - 1
}

describe("task placement across three nodes", () => {
  it("runs each task on the node that accepted it, and every node runs its share", async () => {
    const agentId = await agent({
      name: "placed",
      model: { provider: "scripted", script: [{ text: "placed", delay_ms: 20 }] }
    })
    // what one call costs on node 0: a task accepted there (the same input, so the same tokens)
    const input = { input: { text: "where do I run", user: { id: "u", email: "u@nodes.test" } } }
    // load: 20 invocations in flight on every node at once, three rounds
    const accepted: Array<{ readonly node: number; readonly id: string }> = []
    for (let round = 0; round < 3; round++) {
      await Promise.all(nodes.flatMap((node, i) =>
        Array.from({ length: 20 }, async () => {
          const answer = await post(node, `/v1/agents/${agentId}/invoke`, input)
          expect(answer.status).toBe(200)
          expect(answer.body.status).toBe("completed")
          accepted.push({ node: i, id: answer.body.id })
        })
      ))
    }
    const unit = (await get(nodes[0]!, `/v1/tasks/${accepted.find((t) => t.node === 0)!.id}/llm_usage`)).totals.cost_usd
    expect(unit).toBeGreaterThan(0)
    const runs = await Promise.all(accepted.map(async (t) => ({ ...t, ran: await ranOn(t.id, unit) })))
    const misplaced = runs.filter((r) => r.ran !== r.node)
    expect(misplaced).toEqual([])
    for (let i = 0; i < NODES; i++) expect(runs.filter((r) => r.ran === i)).toHaveLength(60)
  }, 60_000)

  it("wakes a long poll on another node as the task ends there", async () => {
    const agentId = await agent({
      name: "one second",
      model: { provider: "scripted", script: [{ text: "done", delay_ms: 1000 }] }
    })
    // one task accepted on each node, at once
    await Promise.all(nodes.map(async (_, i) => {
      const accepted = await post(nodes[i]!, `/v1/agents/${agentId}/invoke?asynchronous=true`, {
        input: { text: `task on ${i}`, user: { id: "u", email: "u@nodes.test" } }
      })
      expect(accepted.status).toBe(202)
      const started = Date.now()
      // waited for on the two other nodes: each is told by the node that ends it, well before its 5 s re-read
      const answers = await Promise.all(
        nodes.filter((_, j) => j !== i).map((n) => get(n, `/v1/tasks/${accepted.body.id}?wait=30`))
      )
      for (const answer of answers) expect(answer).toMatchObject({ status: "completed", result: "done" })
      expect(Date.now() - started).toBeLessThan(3_000)
    }))
  }, 30_000)

  it("never spends past an agent's budget, with tasks on every node", async () => {
    // a call costs about $0.1, $0.2 or $0.3 (by node), and reserves about twice that first: a $2 budget
    // admits some of 60 calls, and the calls in flight together could spend past it
    const limit = 2
    const agentId = await agent({
      name: "budgeted",
      budget: { limit_usd: limit, period: "total" },
      model: { provider: "scripted", max_output_tokens: 100, script: [{ text: "x".repeat(400), delay_ms: 30 }] }
    })
    const answers = await Promise.all(
      nodes.flatMap((node) =>
        Array.from({ length: 20 }, () =>
          post(node, `/v1/agents/${agentId}/invoke`, {
            input: { text: "spend a little", user: { id: "u", email: "u@nodes.test" } }
          }))
      )
    )
    const completed = answers.filter((a) => a.body.status === "completed")
    expect(completed.length).toBeGreaterThan(0)
    expect(answers.length - completed.length).toBeGreaterThan(0)
    for (const a of answers) {
      if (a.status !== 200) expect(a.body.error.code).toBe("budget_exhausted")
      else if (a.body.status !== "completed") expect(a.body.result).toContain("budget")
    }
    const spent = await Promise.all(completed.map((a) => get(nodes[0]!, `/v1/tasks/${a.body.id}/llm_usage`)))
    const total = spent.reduce((sum, u) => sum + u.totals.cost_usd, 0)
    expect(total).toBeLessThanOrEqual(limit)
    // the agent's record of its spend catches up within the nodes' reporting interval
    const status = await eventually(
      async () => {
        const agent = await get(nodes[1]!, `/v1/agents/${agentId}`)
        return Math.abs(agent.spent_usd - total) < 5e-7 ? agent : undefined
      },
      10_000,
      "the agent's spend to catch up",
      100
    )
    expect(status.spent_usd).toBeLessThanOrEqual(limit)
    expect(status.spent_usd).toBeCloseTo(total, 6)
  }, 60_000)
})
