import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent } from "../agents/support.js"
import { json } from "../connectors/support.js"
import { type ModelServer, startModelServer } from "../support/ModelServers.js"
import { freePort } from "../support/ports.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { mcpPost, obtainTokens, openSession, signedUpAdmin } from "./support.js"

const PATH = "/switchyard-mcp/"

let node: TestNode
let model: ModelServer
beforeAll(async () => {
  const port = String(await freePort())
  const url = `http://127.0.0.1:${port}`
  node = await startTestNode({
    SWITCHYARD_HTTP_PORT: port,
    SWITCHYARD_PUBLIC_URL: url,
    SWITCHYARD_MCP_PUBLIC_URL: url,
    // the organization's model endpoint is a user-set URL: it goes through the egress guard
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1"
  })
  model = await startModelServer("openai")
})
afterAll(async () => {
  await node?.stop()
  await model?.close()
})

/** An organization with its own OpenAI settings (the model server), signed in to the built-in agent's endpoint. */
const organization = async (scope?: string) => {
  const admin = await signedUpAdmin(node)
  const set = await node.fetch("/v1/model-providers/openai", {
    ...json({ api_key: `sk-${admin.email}`, base_url: model.url }),
    method: "PUT",
    apiKey: admin.api_key
  })
  expect(set.status).toBe(200)
  const token = (await obtainTokens(node, admin.email, {
    resource: `${node.baseUrl}${PATH}`,
    ...(scope === undefined ? {} : { scope })
  })).tokens.access_token
  const session = await openSession(node.baseUrl, token, PATH)
  const headers = { authorization: `Bearer ${token}`, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
  const ask = async (question: string) => {
    const response = await mcpPost(
      node.baseUrl,
      {
        jsonrpc: "2.0",
        id: 5,
        method: "tools/call",
        params: { name: "ask", arguments: { question } }
      },
      headers,
      PATH
    )
    expect(response.status).toBe(200)
    return (await response.json()).result
  }
  return { admin, token, headers, ask }
}

/** The function results the model server received in its last request (OpenAI Responses input items). */
const toolOutputs = () =>
  (model.requests.at(-1)!.body.input as Array<any>).filter((i) => i.type === "function_call_output")

describe("the built-in agent at /switchyard-mcp/", () => {
  it("offers one tool, ask, read-only", async () => {
    const { headers } = await organization()
    const listed = await (await mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 2, method: "tools/list" }, headers, PATH))
      .json()
    expect(listed.result.tools.map((t: any) => t.name)).toEqual(["ask"])
    expect(listed.result.tools[0].annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false })
  })

  it("answers with the organization's model, looking things up as the person asking", async () => {
    const { admin, ask } = await organization()
    const agent = await createAgent(node, admin.api_key, {
      name: "Invoice checker",
      model: { provider: "scripted", script: [{ text: "ok" }] }
    })
    const before = model.requests.length
    model.script.push(
      { tool_calls: [{ name: "list_agents", arguments: {} }], usage: { input: 100, output: 10 } },
      { text: "You have one agent: Invoice checker.", usage: { input: 200, output: 20 } }
    )
    const result = await ask("Which agents do I have?")
    expect(result.isError).toBeUndefined()
    expect(result.structuredContent).toMatchObject({
      answer: "You have one agent: Invoice checker.",
      model: { provider: "openai", name: "gpt-4.1-mini" },
      tool_calls: [{ name: "list_agents", arguments: {}, is_error: false }],
      usage: { model_calls: 2, input_tokens: 300, output_tokens: 30 }
    })
    expect(result.content[0].text).toContain("You have one agent: Invoice checker.")
    // both model calls went to the organization's endpoint with its key, over the Responses protocol
    expect(model.requests.length).toBe(before + 2)
    const first = model.requests[before]!
    expect(first.path).toBe("/v1/responses")
    expect(first.headers.authorization).toBe(`Bearer sk-${admin.email}`)
    // the model is offered only read-only tools
    const offered = (first.body.tools as Array<any>).map((t) => t.name)
    expect(offered).toContain("list_agents")
    expect(offered).toContain("get_task")
    expect(offered).not.toContain("invoke_agent")
    expect(offered).not.toContain("invoke_operation")
    expect(offered).not.toContain("cancel_task")
    // the tool ran as the admin, in their organization: it saw their agent
    expect(toolOutputs()[0].output).toContain(agent.id)
  })

  it("cannot exceed the person's permissions: another organization's agent is not found, writes are not tools", async () => {
    const one = await organization()
    const theirs = await createAgent(node, one.admin.api_key, {
      name: "Private",
      model: { provider: "scripted", script: [{ text: "ok" }] }
    })
    const two = await organization("mcp:read")
    model.script.push(
      {
        tool_calls: [
          { name: "get_agent", arguments: { agent_id: theirs.id } },
          { name: "invoke_agent", arguments: { agent_id: theirs.id, text: "leak" } },
          { name: "cancel_task", arguments: { task_id: crypto.randomUUID() } }
        ]
      },
      { text: "I cannot see that agent." }
    )
    const result = await two.ask("Tell me about agent " + theirs.id)
    expect(result.structuredContent.tool_calls.map((c: any) => [c.name, c.is_error])).toEqual([
      ["get_agent", true],
      ["invoke_agent", true],
      ["cancel_task", true]
    ])
    const outputs = toolOutputs().map((o) => String(o.output))
    expect(outputs[0]).toContain("not_found")
    expect(outputs[1]).toContain("no tool named invoke_agent")
    expect(outputs.join("\n")).not.toContain("Private")
    // nothing ran as a task in the other organization
    const tasks = await (await node.fetch(`/v1/tasks?agent_id=${theirs.id}`, { apiKey: one.admin.api_key })).json()
    expect(tasks.items ?? []).toEqual([])
  })

  it("streams a progress notification per lookup when asked with a progressToken", async () => {
    const { headers } = await organization()
    model.script.push(
      { tool_calls: [{ name: "list_agents", arguments: {} }, { name: "list_tasks", arguments: {} }] },
      { text: "Nothing yet." }
    )
    const response = await mcpPost(
      node.baseUrl,
      {
        jsonrpc: "2.0",
        id: 9,
        method: "tools/call",
        params: { name: "ask", arguments: { question: "What is there?" }, _meta: { progressToken: "p-1" } }
      },
      headers,
      PATH
    )
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    const events = (await response.text()).split("\n").filter((l) => l.startsWith("data: ")).map((l) =>
      JSON.parse(l.slice(6))
    )
    const progress = events.filter((e) => e.method === "notifications/progress").map((e) => e.params)
    expect(progress).toEqual([
      { progressToken: "p-1", progress: 1, message: "looking up: list_agents" },
      { progressToken: "p-1", progress: 2, message: "looking up: list_tasks" }
    ])
    expect(events.at(-1)).toMatchObject({ id: 9, result: { structuredContent: { answer: "Nothing yet." } } })
  })

  it("reports a model failure as a tool error", async () => {
    const { ask } = await organization()
    model.script.push({ status: 401, error: "invalid api key for test" })
    const result = await ask("anything")
    expect(result.isError).toBe(true)
    expect(result.structuredContent.error.message).toContain("invalid api key for test")
  })

  it("refuses a token issued for /mcp/", async () => {
    const admin = await signedUpAdmin(node)
    const mcpToken = (await obtainTokens(node, admin.email)).tokens.access_token
    const refused = await mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 1, method: "ping" }, {
      authorization: `Bearer ${mcpToken}`
    }, PATH)
    expect(refused.status).toBe(401)
  })
})
