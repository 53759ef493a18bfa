import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent, invokeAgent, startPetWorld } from "../agents/support.js"
import { invoke } from "../connectors/support.js"
import { freePort } from "../support/ports.js"
import { scrape, total } from "./support.js"

let world: Awaited<ReturnType<typeof startPetWorld>>
let port: number

beforeAll(async () => {
  port = await freePort()
  world = await startPetWorld({
    SWITCHYARD_METRICS_PORT: String(port),
    SWITCHYARD_METRICS_HOST: "127.0.0.1",
    SWITCHYARD_MODEL_PRICES: JSON.stringify({ scripted: { input: 1000, output: 2000 } })
  })
})
afterAll(() => world?.stop())

const REQUESTS = "switchyard_http_requests_total"

describe("GET /metrics (SWITCHYARD_METRICS_PORT)", () => {
  it("parses as the Prometheus text format and has the runtime gauges", async () => {
    // a node that has just started may not hold its shards yet: the gauge follows within a few seconds
    let samples = await scrape(port)
    for (const deadline = Date.now() + 20_000; total(samples, "switchyard_shards_owned") === 0;) {
      if (Date.now() > deadline) break
      await new Promise((r) => setTimeout(r, 200))
      samples = await scrape(port)
    }
    expect(total(samples, "switchyard_shards_owned")).toBeGreaterThan(0)
    expect(total(samples, "switchyard_db_pool_connections", { state: "total" })).toBeGreaterThan(0)
    expect(samples.some((s) => s.name === "switchyard_db_pool_waiting")).toBe(true)
    expect(samples.some((s) => s.name === "nodejs_eventloop_lag_p99_seconds")).toBe(true)
  })

  it("serves only /metrics on its port, and nothing of the API", async () => {
    expect((await fetch(`http://127.0.0.1:${port}/v1/me`)).status).toBe(404)
    expect((await fetch(`http://127.0.0.1:${port}/metrics`, { method: "POST" })).status).toBe(405)
    const api = await world.node.fetch("/metrics")
    expect(api.status).toBe(404)
  })

  it("counts requests by route template and status class, not by raw path", async () => {
    const route = "/v1/agents/:agentId"
    const labels = { method: "GET", status_class: "4xx" }
    const before = await scrape(port)
    const missing = "00000000-0000-4000-8000-000000000000"
    for (let i = 0; i < 3; i++) {
      expect((await world.node.fetch(`/v1/agents/${missing}`, { apiKey: world.apiKey })).status).toBe(404)
    }
    expect((await world.node.fetch("/no/such/route")).status).toBe(404)
    const after = await scrape(port)
    const template = after.find((s) => s.name === REQUESTS && s.labels.route?.startsWith("/v1/agents/:"))?.labels.route
    expect(template ?? route).toMatch(/^\/v1\/agents\/:[A-Za-z_]+$/)
    const labelled = { ...labels, route: template! }
    expect(total(after, REQUESTS, labelled) - total(before, REQUESTS, labelled)).toBe(3)
    expect(total(after, "switchyard_http_request_duration_seconds_count", labelled)).toBe(
      total(after, REQUESTS, labelled)
    )
    expect(total(after, REQUESTS, { route: "unmatched" }) - total(before, REQUESTS, { route: "unmatched" })).toBe(1)
    expect(after.some((s) => s.labels.route?.includes(missing))).toBe(false)
  })

  it("counts connector calls by connector and status class, through both stacks", async () => {
    const connectorId = world.connection.connector_id as string
    const labels = { connector: connectorId, status_class: "2xx" }
    const before = await scrape(port)
    // the first call verifies the key on the general stack; later ones take the plain-Node fast path
    for (let i = 0; i < 4; i++) {
      const response = await invoke(world.node, world.apiKey, connectorId, world.connection.id, "getPet", {
        path_params: { petId: "1" }
      })
      expect(response.status).toBe(200)
      await response.arrayBuffer()
    }
    const after = await scrape(port)
    expect(
      total(after, "switchyard_connector_calls_total", labels) -
        total(before, "switchyard_connector_calls_total", labels)
    ).toBe(4)
    // both stacks label the invoke route with the template the contract declares
    const invokes = after.filter((s) =>
      s.name === REQUESTS && s.labels.method === "POST" &&
      /^\/v1\/tools\/connectors\/:\w+\/connections\/:\w+\/:\w+$/.test(s.labels.route ?? "")
    )
    expect(invokes.length).toBeGreaterThan(0)
    const route = invokes[0]!.labels.route!
    expect(
      total(after, REQUESTS, { route, status_class: "2xx" }) - total(before, REQUESTS, { route, status_class: "2xx" })
    ).toBe(4)
  })

  it("counts tasks by status, their duration, model tokens and cost by provider and model", async () => {
    const agent = await createAgent(world.node, world.apiKey, {
      name: "Pet helper",
      instructions: "Help with pets.",
      model: {
        provider: "scripted",
        script: [
          { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "7" } } }] },
          { text: "Result: {{last_tool_result}}" }
        ]
      },
      skills: [{ connection_id: world.connection.id, operation_ids: ["getPet"] }]
    })
    const before = await scrape(port)
    for (let i = 0; i < 2; i++) {
      const response = await invokeAgent(world.node, world.apiKey, agent.id, "How is pet 7?")
      expect(response.status).toBe(200)
      expect((await response.json()).status).toBe("completed")
    }
    const after = await scrape(port)
    const delta = (name: string, labels: Record<string, string> = {}) =>
      total(after, name, labels) - total(before, name, labels)
    expect(delta("switchyard_tasks_finished_total", { status: "completed" })).toBe(2)
    expect(delta("switchyard_task_duration_seconds_count", { status: "completed" })).toBe(2)
    expect(delta("switchyard_model_calls_total", { provider: "scripted", outcome: "ok" })).toBe(4)
    expect(delta("switchyard_model_tokens_total", { provider: "scripted", type: "input" })).toBeGreaterThan(0)
    expect(delta("switchyard_model_tokens_total", { provider: "scripted", type: "output" })).toBeGreaterThan(0)
    expect(delta("switchyard_model_cost_usd_total", { provider: "scripted" })).toBeGreaterThan(0)
    expect(delta("switchyard_connector_calls_total", { status_class: "2xx" })).toBe(2)
  })
})
