import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call } from "../access/support.js"
import { createAgent, invokeAgent } from "../agents/support.js"
import { obtainTokens, signedUpAdmin } from "../mcp/support.js"
import { type ModelServer, startModelServer } from "../support/ModelServers.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createBase, ready, settled } from "./support.js"

let node: TestNode
let model: ModelServer
let admin: string
beforeAll(async () => {
  model = await startModelServer("openai-chat")
  node = await startTestNode({ SWITCHYARD_OPENAI_CHAT_BASE_URL: model.url })
  admin = (await node.bootstrap()).api_key
})
afterAll(async () => {
  await node?.stop()
  await model?.close()
})

const toolsOffered = (body: any): Array<any> => (body.tools ?? []).map((t: any) => t.function ?? t)

describe("an agent with knowledge bases", () => {
  it("gets search_knowledge, whose cited results are recorded in the thread and sent back to the model", async () => {
    const base = await createBase(node, admin, { name: "Runbooks", description: "How we operate production." })
    const doc = await ready(node, admin, base.id, {
      name: "restart.md",
      text: "# Runbook\n\n## Restarting the queue\n\nDrain the workers first, then restart the broker with systemctl."
    })
    const agent = await createAgent(node, admin, {
      name: "Ops helper",
      model: { provider: "openai-chat", name: "llama3.1" }
    })
    expect((await call(node, admin, "PUT", `/v1/agents/${agent.id}/knowledge-bases/${base.id}`)).status).toBe(204)

    model.script.push(
      { tool_calls: [{ name: "search_knowledge", arguments: { query: "restart broker" } }] },
      { text: "Drain the workers, then restart the broker [1]." }
    )
    const before = model.requests.length
    const task = await (await invokeAgent(node, admin, agent.id, "How do I restart the queue?")).json()
    expect(task.status, JSON.stringify(task)).toBe("completed")
    expect(task.result).toBe("Drain the workers, then restart the broker [1].")

    const sent = model.requests.slice(before)
    const tool = toolsOffered(sent[0]!.body).find((t) => t.name === "search_knowledge")
    expect(tool.description).toContain(`Runbooks (${base.id}): How we operate production.`)
    expect(tool.parameters.required).toEqual(["query"])

    const thread = (await call(node, admin, "GET", `/v1/tasks/${task.id}/thread`)).body
    const calls = thread.events.filter((e: any) => e.type === "tool_call").map((e: any) => e.data)
    expect(calls).toHaveLength(1)
    expect(calls[0]).toMatchObject({ name: "search_knowledge", outcome: "ok", arguments: { query: "restart broker" } })
    const result = JSON.parse(calls[0].result)
    expect(result.results[0]).toMatchObject({
      document_id: doc.id,
      document_name: "restart.md",
      knowledge_base_id: base.id,
      knowledge_base: "Runbooks",
      chunk_index: 0,
      heading_path: ["Runbook", "Restarting the queue"]
    })
    expect(result.results[0].citation).toBe(
      `[1] restart.md › Runbook › Restarting the queue (document ${doc.id}, chunk 0)`
    )
    expect(result.results[0].text).toContain("systemctl")
    // the model got the same result as its tool message
    expect(JSON.stringify(sent[1]!.body)).toContain("systemctl")

    // detached: the next run has no search_knowledge
    expect((await call(node, admin, "DELETE", `/v1/agents/${agent.id}/knowledge-bases/${base.id}`)).status).toBe(204)
    model.script.push({ text: "no knowledge" })
    const mark = model.requests.length
    const plain = await (await invokeAgent(node, admin, agent.id, "again")).json()
    expect(plain.status).toBe("completed")
    expect(toolsOffered(model.requests[mark]!.body).map((t) => t.name)).not.toContain("search_knowledge")
  })

  it("answers a bad call or a base it does not have as the tool's error, and an empty search with a note", async () => {
    const base = await createBase(node, admin, { name: "Tiny" })
    await ready(node, admin, base.id, { name: "a.txt", text: "apples are red" })
    const agent = await createAgent(node, admin, { name: "Careful", model: { provider: "openai-chat", name: "m" } })
    await call(node, admin, "PUT", `/v1/agents/${agent.id}/knowledge-bases/${base.id}`)
    model.script.push(
      { tool_calls: [{ name: "search_knowledge", arguments: { q: "apples" } }] },
      {
        tool_calls: [{
          name: "search_knowledge",
          arguments: { query: "apples", knowledge_base_id: "00000000-0000-4000-8000-000000000000" }
        }]
      },
      { tool_calls: [{ name: "search_knowledge", arguments: { query: "bananas" } }] },
      { text: "done" }
    )
    const task = await (await invokeAgent(node, admin, agent.id, "fruit?")).json()
    expect(task.status).toBe("completed")
    const thread = (await call(node, admin, "GET", `/v1/tasks/${task.id}/thread`)).body
    const calls = thread.events.filter((e: any) => e.type === "tool_call").map((e: any) => e.data)
    expect(calls.map((c: any) => c.outcome)).toEqual(["error", "error", "ok"])
    expect(calls[0].result).toContain("invalid arguments")
    expect(calls[1].result).toContain("is not one of your knowledge bases")
    expect(JSON.parse(calls[2].result)).toEqual({
      results: [],
      note: "Nothing matched: try other words, or fewer of them."
    })
  })
})

describe("knowledge bases through MCP", () => {
  it("list_knowledge_bases, add_knowledge_document and search_knowledge do what REST does", async () => {
    const person = await signedUpAdmin(node)
    const { access_token } = (await obtainTokens(node, person.email)).tokens
    const client = new Client({ name: "knowledge-test", version: "1.0.0" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${node.baseUrl}/mcp/`), {
        requestInit: { headers: { authorization: `Bearer ${access_token}` } }
      })
    )
    const base = await createBase(node, person.api_key, { name: "Via MCP" })
    const tool = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args })
      return { isError: result.isError === true, value: result.structuredContent as any }
    }
    const { tools } = await client.listTools()
    expect(tools.find((t) => t.name === "search_knowledge")?.annotations).toMatchObject({ readOnlyHint: true })
    expect(tools.find((t) => t.name === "add_knowledge_document")?.annotations).toMatchObject({ readOnlyHint: false })

    const listed = await tool("list_knowledge_bases", {})
    expect(listed.value.items.map((b: any) => b.id)).toEqual([base.id])
    const added = await tool("add_knowledge_document", {
      knowledge_base_id: base.id,
      name: "glossary.md",
      text: "# Glossary\n\nA widget is a small gadget."
    })
    expect(added.value).toMatchObject({ status: "processing", name: "glossary.md" })
    expect((await settled(node, person.api_key, base.id, added.value.id)).status).toBe("ready")
    const found = await tool("search_knowledge", { knowledge_base_id: base.id, query: "widgets" })
    expect(found.value.items[0]).toMatchObject({ document_name: "glossary.md", heading_path: ["Glossary"] })
    const missing = await tool("search_knowledge", {
      knowledge_base_id: "00000000-0000-4000-8000-000000000000",
      query: "x"
    })
    expect(missing.isError).toBe(true)
    await client.close()
  })
})
