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

  const threadOf = async (taskId: string) =>
    (await (await node.fetch(`/v1/tasks/${taskId}/thread`, { apiKey })).json()).events as Array<any>

  it("keeps an answer cut off at the output limit, and its thread says it was truncated", async () => {
    servers[kind]!.script.push({ text: "The first half of the", finish: "length" })
    const agent = await createAgent(node, apiKey, {
      name: `${kind} cut`,
      model: { provider: kind, name: models[kind] }
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "Write a long story")).json()
    expect(task).toMatchObject({ status: "completed", result: "The first half of the" })
    const events = await threadOf(task.id)
    expect(events.find((e) => e.type === "model_call").data.finish).toBe("length")
    expect(events.at(-1)).toMatchObject({ type: "agent_message", data: { text: task.result, truncated: true } })
  })

  it("ends the task in error when the output limit cut the answer off before any text", async () => {
    servers[kind]!.script.push({ finish: "length" })
    const agent = await createAgent(node, apiKey, {
      name: `${kind} cut early`,
      model: { provider: kind, name: models[kind], max_output_tokens: 16 }
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "Think hard")).json()
    expect(task.status).toBe("error")
    expect(task.result).toBe(
      "The model's answer was cut off at its output limit of 16 tokens before it wrote any text: raise the " +
        "agent's model.max_output_tokens."
    )
    expect(task.error_code).toBe("no_answer")
    // the call was made and paid for: it is recorded
    expect((await threadOf(task.id)).map((e) => e.type)).toEqual(["user_message", "model_call", "error"])
  })

  it("does not make a tool call whose arguments are not valid JSON, and tells the model", async () => {
    const server = servers[kind]!
    server.script.push(
      { tool_calls: [{ name: "listPets", raw_arguments: "{\"query\": {\"lim" }], finish: "length" },
      { text: "Sorry, let me stop there." }
    )
    const before = server.requests.length
    const calls = target.requests.length
    const agent = await createAgent(node, apiKey, {
      name: `${kind} bad arguments`,
      model: { provider: kind, name: models[kind] },
      skills: [{ connection_id: connection.id, operation_ids: ["listPets"] }]
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "List the pets")).json()
    expect(task).toMatchObject({ status: "completed", result: "Sorry, let me stop there." })
    // not made with {} in place of what the model meant
    expect(target.requests.length).toBe(calls)
    const tool = (await threadOf(task.id)).find((e) => e.type === "tool_call")
    expect(tool.data).toMatchObject({ name: "listPets", outcome: "error", status: null })
    expect(tool.data.result).toContain("the call to listPets was not made: its arguments must be one JSON object")
    expect(JSON.stringify(server.requests[before + 1]!.body)).toContain("was not made")
  })

  it("estimates the tokens of a call whose server reported no usage, and says so, instead of counting it free", async () => {
    servers[kind]!.script.push({ text: "An answer of some forty characters, or so.", omit_usage: true })
    const agent = await createAgent(node, apiKey, {
      name: `${kind} no usage`,
      instructions: "Answer in one sentence.",
      model: { provider: kind, name: models[kind] }
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(task.status).toBe("completed")
    const call = (await threadOf(task.id)).find((e) => e.type === "model_call")
    expect(call.data).toMatchObject({ usage_estimated: true, output_tokens: 11, cached_tokens: 0 })
    expect(call.data.input_tokens).toBeGreaterThan(0)
    const usage = await (await node.fetch(`/v1/tasks/${task.id}/llm_usage`, { apiKey })).json()
    expect(usage.totals).toMatchObject({ calls: 1, input_tokens: call.data.input_tokens, output_tokens: 11 })
    if (kind !== "openai-chat") expect(usage.totals.cost_usd).toBeGreaterThan(0)
    // no more output than the limit sent, which a budget's reservation counts
    servers[kind]!.script.push({ text: "An answer of some forty characters, or so.", omit_usage: true })
    const capped = await createAgent(node, apiKey, {
      name: `${kind} no usage, capped`,
      model: { provider: kind, name: models[kind], max_output_tokens: 5 }
    })
    const cut = await (await invokeAgent(node, apiKey, capped.id, "hi")).json()
    expect((await threadOf(cut.id)).find((e) => e.type === "model_call").data.output_tokens).toBe(5)
  })

  it("waits as long as a 429's Retry-After asks, then tries again", async () => {
    const server = servers[kind]!
    server.script.push({ status: 429, error: "rate limited", headers: { "retry-after": "1" } }, { text: "in time" })
    const before = server.requests.length
    const agent = await createAgent(node, apiKey, {
      name: `${kind} 429`,
      model: { provider: kind, name: models[kind] }
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(task).toMatchObject({ status: "completed", result: "in time" })
    const [first, second] = server.requests.slice(before)
    // not the 0.5 s of a retry without Retry-After
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1000)
  })

  it("fails at once, saying how long to wait, when Retry-After asks for more than a minute", async () => {
    const server = servers[kind]!
    server.script.push({ status: 429, error: "quota exceeded", headers: { "retry-after": "3600" } })
    const before = server.requests.length
    const agent = await createAgent(node, apiKey, {
      name: `${kind} quota`,
      model: { provider: kind, name: models[kind] }
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(task.status).toBe("error")
    expect(task.result).toBe(
      "The model call failed (model_http_error, HTTP 429): quota exceeded (the server asks to retry after 3600 s)"
    )
    expect(task.error_code).toBe("model_error")
    expect(server.requests.length).toBe(before + 1)
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

describe("a tool the agent does not have", () => {
  it("is not called; the model is told which tools there are, and can correct itself", async () => {
    const server = servers["openai-chat"]!
    server.script.push(
      { tool_calls: [{ name: "listPet", arguments: {} }] },
      { tool_calls: [{ name: "listPets", arguments: {} }] },
      { text: "Two pets." }
    )
    const before = server.requests.length
    const calls = target.requests.length
    const agent = await createAgent(node, apiKey, {
      name: "misspelt tool",
      model: { provider: "openai-chat", name: "llama3.1" },
      skills: [{ connection_id: connection.id, operation_ids: ["listPets"] }]
    })
    const task = await (await invokeAgent(node, apiKey, agent.id, "List the pets")).json()
    expect(task).toMatchObject({ status: "completed", result: "Two pets." })
    const told = server.requests[before + 1]!.body.messages.find((m: any) => m.role === "tool").content
    expect(told).toMatch(/^error: there is no tool named listPet; its tools are listPets(, |$)/)
    expect(target.requests.length).toBe(calls + 1)
  })
})

describe("a very long tool result", () => {
  it("reaches the model cut at 64 KiB, saying so, without the rest being downloaded", async () => {
    const server = servers["openai-chat"]!
    const previous = target.reply
    let written = 0
    target.reply = async (_request, response) => {
      response.writeHead(200, { "content-type": "text/plain" })
      // 64 MiB of three-byte characters (more than any socket buffers), written until the client stops reading
      for (; written < 64 * 1024 * 1024 && !response.destroyed; written += 3 * 4096) {
        if (!response.write("€".repeat(4096))) {
          await new Promise((resolve) => response.once("drain", resolve).once("close", resolve))
        }
      }
      response.end()
    }
    try {
      server.script.push({ tool_calls: [{ name: "listPets", arguments: {} }] }, { text: "Too many pets." })
      const before = server.requests.length
      const agent = await createAgent(node, apiKey, {
        name: "long result",
        model: { provider: "openai-chat", name: "llama3.1" },
        skills: [{ connection_id: connection.id, operation_ids: ["listPets"] }]
      })
      const task = await (await invokeAgent(node, apiKey, agent.id, "List the pets")).json()
      expect(task).toMatchObject({ status: "completed", result: "Too many pets." })
      const sent = server.requests[before + 1]!.body.messages.find((m: any) => m.role === "tool").content as string
      expect(sent.startsWith("€€€")).toBe(true)
      // cut between characters, not inside one
      expect(sent).not.toContain("\uFFFD")
      expect(sent).toMatch(/…\[truncated\]$/)
      expect(Buffer.byteLength(sent)).toBeLessThanOrEqual(64 * 1024 + 64)
      expect(written).toBeLessThan(64 * 1024 * 1024)
    } finally {
      target.reply = previous
    }
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
