import addFormats from "ajv-formats"
import { Ajv2020 } from "ajv/dist/2020.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent } from "../agents/support.js"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { freePort } from "../support/ports.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { mcpPost, obtainTokens, openSession, signedUpAdmin } from "./support.js"

let node: TestNode
let admin: Awaited<ReturnType<typeof signedUpAdmin>>
beforeAll(async () => {
  const port = String(await freePort())
  const url = `http://127.0.0.1:${port}`
  // with SWITCHYARD_MCP_PUBLIC_URL the built-in agent's endpoint (and its `ask` tool) is served too
  node = await startTestNode({ SWITCHYARD_HTTP_PORT: port, SWITCHYARD_PUBLIC_URL: url, SWITCHYARD_MCP_PUBLIC_URL: url })
  admin = await signedUpAdmin(node)
})
afterAll(() => node?.stop())

/** `tools/list` of an endpoint, as a client gets it. */
const listTools = async (path: string) => {
  const { access_token } = (await obtainTokens(node, admin.email, { resource: `${node.baseUrl}${path}` })).tokens
  const headers = { authorization: `Bearer ${access_token}`, "mcp-protocol-version": "2025-11-25" }
  const session = await openSession(node.baseUrl, access_token, path)
  const response = await mcpPost(
    node.baseUrl,
    { jsonrpc: "2.0", id: 2, method: "tools/list" },
    { ...headers, "mcp-session-id": session },
    path
  )
  expect(response.status).toBe(200)
  return (await response.json()).result.tools as Array<Record<string, any>>
}

/** A validator as strict as a careful client's: JSON Schema 2020-12, strict mode, formats checked. */
const strictAjv = () => {
  const ajv = new Ajv2020({ strict: true, allErrors: true })
  addFormats.default(ajv)
  return ajv
}

const idsIn = (schema: unknown): Array<string> =>
  typeof schema !== "object" || schema === null
    ? []
    : Object.entries(schema).flatMap(([key, value]) => key === "$id" ? [String(value)] : idsIn(value))

describe.each(["/mcp/", "/switchyard-mcp/"])("the tool schemas of %s", (path) => {
  it("compile in ajv 2020 strict mode with formats, as object schemas without $id", async () => {
    const tools = await listTools(path)
    expect(tools.length).toBeGreaterThan(0)
    for (const tool of tools) {
      for (const key of ["inputSchema", "outputSchema"] as const) {
        const schema = tool[key]
        if (key === "outputSchema" && schema === undefined) continue
        expect({ tool: tool.name, key, type: schema.type }).toEqual({ tool: tool.name, key, type: "object" })
        expect({ tool: tool.name, key, ids: idsIn(schema) }).toEqual({ tool: tool.name, key, ids: [] })
        // a fresh instance per schema: compiling one must not depend on what another registered
        expect(() => strictAjv().compile(schema), `${tool.name} ${key}`).not.toThrow()
      }
    }
  })
})

describe("tool schemas", () => {
  it("describe what the tools take: no arguments is an object, ids are checked, defs are inlined", async () => {
    const tools = new Map((await listTools("/mcp/")).map((t) => [t.name, t.inputSchema]))
    const listAgents = strictAjv().compile(tools.get("list_agents"))
    expect(listAgents({})).toBe(true)
    expect(listAgents([1, 2])).toBe(false)
    expect(listAgents("str")).toBe(false)
    const getTask = strictAjv().compile(tools.get("get_task"))
    expect(getTask({ task_id: "0190a6f8-5a8b-7c3d-8e9f-0a1b2c3d4e5f" })).toBe(true)
    expect(getTask({ task_id: "not-a-uuid" })).toBe(false)
    const listTasks = tools.get("list_tasks")
    expect(JSON.stringify(listTasks)).not.toContain("$ref")
    expect(listTasks.properties.limit).toMatchObject({ type: "integer", minimum: 1, maximum: 200 })
    const invoke = strictAjv().compile(tools.get("invoke_operation"))
    expect(invoke({
      connector_id: "_",
      connection_id: "0190a6f8-5a8b-7c3d-8e9f-0a1b2c3d4e5f",
      operation_id: "listPets",
      body_params: { name: "Rex" },
      query_params: { limit: 2 }
    })).toBe(true)
  })
})

describe("output schemas", () => {
  it("describe every result's structuredContent: outputs, arrays wrapped as items, and tool errors", async () => {
    const { access_token } = (await obtainTokens(node, admin.email)).tokens
    const session = await openSession(node.baseUrl, access_token)
    const tools = new Map((await listTools("/mcp/")).map((t) => [t.name, t.outputSchema]))
    const agent = await createAgent(node, admin.api_key, {
      name: "Shapes",
      model: { provider: "scripted", script: [{ text: "done" }] }
    })
    let id = 10
    const call = async (name: string, args: Record<string, unknown>) => {
      const response = await mcpPost(node.baseUrl, {
        jsonrpc: "2.0",
        id: id++,
        method: "tools/call",
        params: { name, arguments: args }
      }, { authorization: `Bearer ${access_token}`, "mcp-session-id": session })
      const { result } = await response.json()
      const valid = strictAjv().compile(tools.get(name))
      expect({ name, valid: valid(result.structuredContent), errors: valid.errors ?? null })
        .toEqual({ name, valid: true, errors: null })
      return result
    }
    const connector = await createConnector(node, admin.api_key, petstore("http://127.0.0.1:9"))
    const connection = await createConnection(node, admin.api_key, connector.id, {
      name: "pets",
      credentials: { type: "api_key", value: "k" }
    })
    const operation = { connector_id: connector.id, connection_id: connection.id }
    const task = (await call("invoke_agent", { agent_id: agent.id, text: "go" })).structuredContent
    expect(task).toMatchObject({ status: "completed", result: "done" })
    for (
      const [name, args] of [
        ["list_agents", {}],
        ["get_agent", { agent_id: agent.id }],
        ["list_tasks", {}],
        ["get_task", { task_id: task.id }],
        ["get_task_thread", { task_id: task.id }],
        ["get_task_usage", { task_id: task.id }],
        ["cancel_task", { task_id: task.id }],
        ["search_connectors", { query: "pet" }],
        ["list_operations", operation],
        ["get_operation_schema", { ...operation, operation_id: "createPet" }],
        ["list_skills", {}],
        ["list_files", {}],
        ["list_schedules", {}],
        ["list_functions", {}],
        ["list_knowledge_bases", {}],
        ["list_approvals", {}],
        ["get_usage", {}],
        ["get_command_policy", { agent_id: agent.id }]
      ] as const
    ) await call(name, args)
    const missing = await call("get_task", { task_id: crypto.randomUUID() })
    expect(missing.structuredContent.error.code).toBe("not_found")
    // an array output is wrapped as items, which its schema says
    expect(tools.get("list_operations").anyOf[0]).toMatchObject({ required: ["items"] })
    expect((await call("list_operations", operation)).structuredContent.items.length).toBeGreaterThan(0)
  })
})

describe("tool descriptions", () => {
  it("tell a model what every tool and every argument is for", async () => {
    const undescribed = (await listTools("/mcp/")).flatMap((tool) => [
      ...(typeof tool.description === "string" && tool.description.length >= 40 ? [] : [tool.name]),
      ...Object.entries(tool.inputSchema.properties ?? {})
        .filter(([, schema]) => typeof (schema as { description?: unknown }).description !== "string")
        .map(([name]) => `${tool.name}.${name}`)
    ])
    expect(undescribed).toEqual([])
  })
})
