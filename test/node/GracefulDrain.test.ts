import { afterAll, describe, expect, it } from "vitest"
import { bootstrapOrg } from "../support/Bootstrap.js"
import { type Cluster, startCluster } from "../support/ClusterHarness.js"
import { eventually } from "../support/Poll.js"
import { migratedDatabase } from "../support/TestDatabase.js"
import { testEnvironment } from "../support/TestNode.js"

let cluster: Cluster | undefined
afterAll(() => cluster?.stop())

describe("SIGTERM on a node under load", () => {
  it("costs the clients nothing: every request succeeds and every accepted task completes", async () => {
    const env = await testEnvironment({ DATABASE_URL: await migratedDatabase() })
    let apiKey: string
    ;[cluster, { api_key: apiKey }] = await Promise.all([
      startCluster({ nodes: 2, env }),
      bootstrapOrg(env, "Drain", "d@o.test")
    ])
    const headers = { "x-api-key": apiKey, "content-type": "application/json" }
    const agent = await fetch(`${cluster.url}/v1/agents`, {
      method: "POST",
      headers,
      body: JSON.stringify({ name: "drain", model: { provider: "scripted", script: [{ text: "ok", delay_ms: 300 }] } })
    }).then((r) => r.json())

    const statuses: Array<number> = []
    const taskIds: Array<string> = []
    let running = true
    const client = async () => {
      while (running) {
        const read = await fetch(`${cluster!.url}/v1/me`, { headers }).then((r) => r.status, () => 0)
        statuses.push(read)
        const invoke = await fetch(`${cluster!.url}/v1/agents/${agent.id}/invoke?asynchronous=true`, {
          method: "POST",
          headers,
          body: JSON.stringify({ input: { text: "hi", user: { id: "u", email: "u@example.com" } } })
        }).then(
          async (r) => ({ status: r.status, body: await r.json().catch(() => null) }),
          () => ({ status: 0, body: null })
        )
        statuses.push(invoke.status)
        if (invoke.status === 202) taskIds.push(invoke.body.id)
      }
    }
    const clients = Array.from({ length: 6 }, client)
    // load before, during and after the stop: a few rounds of every client on each side of it
    await eventually(() => statuses.length >= 24 || undefined, 30_000, "requests before the stop")
    await cluster.nodes[1]!.process.stop("SIGTERM")
    const atExit = statuses.length
    await eventually(() => statuses.length >= atExit + 24 || undefined, 30_000, "requests after the stop")
    running = false
    await Promise.all(clients)

    const failures = statuses.filter((s) => s !== 200 && s !== 202)
    expect(statuses.length).toBeGreaterThan(20)
    expect(failures).toEqual([])
    const ends = await Promise.all(
      taskIds.map((id) => fetch(`${cluster!.url}/v1/tasks/${id}?wait=60`, { headers }).then((r) => r.json()))
    )
    expect(ends.filter((t) => t.status !== "completed")).toEqual([])
  }, 180_000)
})
