import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createConnection, createConnector, json, petstore } from "../connectors/support.js"
import { type ModelServer, startModelServer } from "../support/ModelServers.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createAgent, invokeAgent } from "./support.js"

const kinds = ["openai", "openai-chat", "anthropic"] as const
const models: Record<(typeof kinds)[number], string> = {
  openai: "gpt-4.1-mini",
  "openai-chat": "llama3.1",
  anthropic: "claude-sonnet-4-5"
}

let node: TestNode
let target: TargetServer
let apiKey: string
let connection: any
const servers: Partial<Record<(typeof kinds)[number], ModelServer>> = {}

beforeAll(async () => {
  for (const kind of kinds) servers[kind] = await startModelServer(kind)
  node = await startTestNode({
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    // the operator's own endpoints: no egress guard on these
    SWITCHYARD_OPENAI_BASE_URL: servers.openai!.url,
    SWITCHYARD_OPENAI_API_KEY: "sk-deployment",
    SWITCHYARD_OPENAI_CHAT_BASE_URL: servers["openai-chat"]!.url,
    SWITCHYARD_ANTHROPIC_BASE_URL: servers.anthropic!.url,
    SWITCHYARD_ANTHROPIC_API_KEY: "ak-deployment"
  })
  target = await startTargetServer()
  apiKey = (await node.bootstrap()).api_key
  const connector = await createConnector(node, apiKey, petstore(target.url))
  connection = await createConnection(node, apiKey, connector.id, {
    name: "pets",
    credentials: { type: "api_key", value: "k" }
  })
})
afterAll(async () => {
  await node?.stop()
  await target?.close()
  for (const s of Object.values(servers)) await s?.close()
})

describe.each(kinds)("an agent on the %s protocol", (kind) => {
  it("calls a tool, sends its result back, and answers, with tokens and cost recorded", async () => {
    const server = servers[kind]!
    server.script.push(
      {
        tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "9" } } }],
        usage: { input: 120, output: 20, cached: 100 }
      },
      { text: `The pet is fine (${kind}).`, usage: { input: 180, output: 12 } }
    )
    const before = server.requests.length
    const agent = await createAgent(node, apiKey, {
      name: `${kind} agent`,
      instructions: "Be brief.",
      model: { provider: kind, name: models[kind] },
      skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "How is pet 9?")).json()
    expect(task.status).toBe("completed")
    expect(task.result).toBe(`The pet is fine (${kind}).`)
    expect(target.requests.at(-1)!.path).toBe("/pets/9")
    const sent = server.requests.slice(before)
    expect(sent).toHaveLength(2)
    // the tool the model saw is the operation, with its input schema
    expect(JSON.stringify(sent[0]!.body)).toContain("getPet")
    expect(JSON.stringify(sent[0]!.body)).toContain("path_params")
    // the second request carries the tool's result
    expect(JSON.stringify(sent[1]!.body)).toContain("/pets/9")
    const usage = await (await node.fetch(`/v1/tasks/${task.id}/llm_usage`, { apiKey })).json()
    expect(usage.totals).toMatchObject({ calls: 2, input_tokens: 300, output_tokens: 32, cached_tokens: 100 })
    if (kind !== "openai-chat") expect(usage.totals.cost_usd).toBeGreaterThan(0)
  })

  it("ends the task in error with the provider's message and status when the model fails", async () => {
    const server = servers[kind]!
    server.script.push({ status: 401, error: "invalid api key for test" })
    const agent = await createAgent(node, apiKey, {
      name: `${kind} failing`,
      model: { provider: kind, name: models[kind] }
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(task.status).toBe("error")
    expect(task.result).toContain("invalid api key for test")
    // the provider's status too: "boom" alone does not say whether to fix a key or wait
    expect(task.result).toContain("(model_http_error, HTTP 401)")
  })
})

describe("organization model settings", () => {
  it("uses the organization's key over the deployment's and never shows it", async () => {
    const server = servers.openai!
    const set = await node.fetch("/v1/model-providers/openai", {
      ...json({ api_key: "sk-organization" }),
      method: "PUT",
      apiKey
    })
    expect(set.status).toBe(200)
    const shown = await set.json()
    expect(shown).toMatchObject({ provider: "openai", has_api_key: true })
    expect(JSON.stringify(shown)).not.toContain("sk-organization")
    server.script.push({ text: "hello" })
    const agent = await createAgent(node, apiKey, { name: "org key", model: { provider: "openai" } })
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(task.status).toBe("completed")
    expect(server.requests.at(-1)!.headers.authorization).toBe("Bearer sk-organization")
    expect((await node.fetch("/v1/model-providers/openai", { method: "DELETE", apiKey })).status).toBe(204)
  })
})
