import { afterAll, describe, expect, it } from "vitest"
import { petstore } from "../connectors/support.js"
import { type NodeProcess, runCli, spawnNode } from "../support/NodeProcess.js"
import { freePort } from "../support/ports.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
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
      SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
      SWITCHYARD_SHARD_LOCK_EXPIRATION: "3 seconds",
      SWITCHYARD_SHARD_LOCK_REFRESH_INTERVAL: "1 second"
    })
    const a = spawnNode(env)
    nodes.push(a)
    await a.waitReady().catch((e) => {
      throw e
    })
    const { api_key: apiKey } = JSON.parse(
      (await runCli(["bootstrap", "--org", "Failover", "--email", "f@o.test", "--json"], env)).stdout
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
          { text: "finished after {{last_tool_result}}", delay_ms: 8000 }
        ]
      },
      skills: [{ connection_id: connection.body.id, operation_ids: ["getPet"] }]
    })
    const accepted = await post(a.baseUrl, `/v1/agents/${agent.body.id}/invoke?asynchronous=true`, apiKey, {
      input: { text: "go", user: { id: "u", email: "u@example.com" } }
    })
    expect(accepted.status).toBe(202)

    // wait until the tool call is recorded, then bring up a second node and kill the first
    const threadOf = (base: string) =>
      fetch(`${base}/v1/tasks/${accepted.body.id}/thread`, { headers: { "x-api-key": apiKey } }).then((r) => r.json())
    const deadline = Date.now() + 20_000
    while (!(await threadOf(a.baseUrl)).events.some((e: any) => e.type === "tool_call") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100))
    }
    const b = spawnNode({
      ...env,
      SWITCHYARD_HTTP_PORT: String(await freePort()),
      SWITCHYARD_RUNNER_PORT: String(await freePort())
    })
    nodes.push(b)
    await b.waitReady()
    await a.stop("SIGKILL")

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
