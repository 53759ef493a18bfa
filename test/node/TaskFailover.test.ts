import { afterAll, describe, expect, it } from "vitest"
import { petstore } from "../connectors/support.js"
import { bootstrapOrg } from "../support/Bootstrap.js"
import { type NodeProcess, spawnNode } from "../support/NodeProcess.js"
import { eventually } from "../support/Poll.js"
import { freePort } from "../support/ports.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { migratedDatabase } from "../support/TestDatabase.js"
import { testEnvironment } from "../support/TestNode.js"

const nodes: Array<NodeProcess> = []
let target: TargetServer | undefined
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop("SIGKILL")))
  await target?.close()
})

const post = (base: string, path: string, apiKey: string, body: unknown) =>
  fetch(base + path, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
    .then(async (r) => ({ status: r.status, body: await r.json() }))

describe("a node dies during a task", () => {
  it("the task resumes on another node and a recorded tool call is not made again", async () => {
    target = await startTargetServer()
    const env = await testEnvironment({
      DATABASE_URL: await migratedDatabase(),
      SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
      SWITCHYARD_SHARD_LOCK_EXPIRATION: "3 seconds",
      SWITCHYARD_SHARD_LOCK_REFRESH_INTERVAL: "1 second"
    })
    // both nodes up first (started together), so that the kill can follow the recorded call at once
    const a = spawnNode(env)
    const b = spawnNode({
      ...env,
      SWITCHYARD_HTTP_PORT: String(await freePort()),
      SWITCHYARD_RUNNER_PORT: String(await freePort())
    })
    nodes.push(a, b)
    const [{ api_key: apiKey }] = await Promise.all([
      bootstrapOrg(env, "Failover", "f@o.test"),
      a.waitReady(),
      b.waitReady()
    ])
    // the shards are spread: the task stays on the first node's shard until the kill
    await eventually(
      async () => {
        const owned = await Promise.all(
          [a, b].map((n) => fetch(`${n.baseUrl}/readyz`).then((r) => r.json() as any).then((r) => r.shards_owned ?? 0))
        )
        return owned[0] > 0 && owned[1] > 0 && owned[0] + owned[1] === 300 || undefined
      },
      30_000,
      "both nodes to hold shards",
      100
    )
    const connector = await post(a.baseUrl, "/v1/tools/connectors", apiKey, { spec: petstore(target.url) })
    const connection = await post(a.baseUrl, `/v1/tools/connectors/${connector.body.id}/connections`, apiKey, {
      name: "pets",
      credentials: { type: "api_key", value: "k" }
    })
    const agent = await post(a.baseUrl, "/v1/agents", apiKey, {
      name: "durable",
      model: {
        provider: "scripted",
        script: [
          { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "once" } } }] },
          { text: "finished after {{last_tool_result}}", delay_ms: 3000 }
        ]
      },
      skills: [{ connection_id: connection.body.id, operation_ids: ["getPet"] }]
    })
    const accepted = await post(a.baseUrl, `/v1/agents/${agent.body.id}/invoke?asynchronous=true`, apiKey, {
      input: { text: "go", user: { id: "u", email: "u@example.com" } }
    })
    expect(accepted.status).toBe(202)

    // wait until the tool call is recorded, then kill the first node while the task waits on its model
    const threadOf = (base: string) =>
      fetch(`${base}/v1/tasks/${accepted.body.id}/thread`, { headers: { "x-api-key": apiKey } }).then((r) => r.json())
    const deadline = Date.now() + 20_000
    while (!(await threadOf(a.baseUrl)).events.some((e: any) => e.type === "tool_call") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100))
    }
    await a.stop("SIGKILL")
    // the kill landed mid-task: what follows is the other node's doing
    const atKill = await fetch(`${b.baseUrl}/v1/tasks/${accepted.body.id}`, { headers: { "x-api-key": apiKey } })
      .then((r) => r.json())
    expect(["pending", "executing"]).toContain(atKill.status)

    let task: any
    const end = Date.now() + 40_000
    do {
      await new Promise((r) => setTimeout(r, 250))
      task = await fetch(`${b.baseUrl}/v1/tasks/${accepted.body.id}`, { headers: { "x-api-key": apiKey } }).then((r) =>
        r.json()
      )
    } while (["pending", "executing"].includes(task.status) && Date.now() < end)

    expect(task.status).toBe("completed")
    expect(task.result).toContain("/pets/once")
    expect(target.requests.filter((r) => r.path === "/pets/once")).toHaveLength(1)
    const events = (await threadOf(b.baseUrl)).events
    expect(events.filter((e: any) => e.type === "tool_call")).toHaveLength(1)
    expect(events.at(-1).type).toBe("agent_message")
  }, 120_000)
})
