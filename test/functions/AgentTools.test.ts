import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, expectError, withDatabase } from "../access/support.js"
import { createAgent, invokeAgent, startPetWorld } from "../agents/support.js"
import { connectSdkClient, signedUpAdmin } from "../mcp/support.js"
import { createFunction } from "./support.js"

let world: Awaited<ReturnType<typeof startPetWorld>>
beforeAll(async () => {
  world = await startPetWorld()
})
afterAll(() => world?.stop())

const PET_LOOKUP = `export default async (input, ctx) => {
  const answer = await ctx.connectors.invoke(input.connection_id, "getPet", { path_params: { petId: input.pet } })
  await ctx.files.write("pets/" + input.pet + ".json", JSON.stringify(answer.body))
  ctx.log("looked up", input.pet)
  return { status: answer.status, path: answer.body.path }
}`

describe("custom functions as agent tools", () => {
  it("an attached function is a tool named after it: the run calls it, connectors as the run, files in its workspace", async () => {
    const { node, apiKey, connection, target } = world
    const fn = await createFunction(node, apiKey, PET_LOOKUP, {
      description: "Looks a pet up.",
      input_schema: {
        type: "object",
        required: ["connection_id", "pet"],
        properties: { connection_id: { type: "string" }, pet: { type: "string" } }
      }
    })
    const agent = await createAgent(node, apiKey, {
      name: "Pet finder",
      model: {
        provider: "scripted",
        script: [
          { tool_calls: [{ name: fn.name, arguments: { connection_id: connection.id, pet: "42" } }] },
          { tool_calls: [{ name: fn.name, arguments: { pet: 7 } }] },
          { text: "found: {{last_tool_result}}" }
        ]
      }
    })
    expect((await call(node, apiKey, "PUT", `/v1/agents/${agent.id}/functions/${fn.id}`)).status).toBe(200)
    const response = await invokeAgent(node, apiKey, agent.id, "find pet 42")
    const task = await response.json()
    expect(task.status, JSON.stringify(task)).toBe("completed")
    const thread = (await call(node, apiKey, "GET", `/v1/tasks/${task.id}/thread`)).body
    const results = thread.events.filter((e: any) => e.type === "tool_call").map((e: any) => e.data)
    expect(results.map((r: any) => [r.name, r.outcome])).toEqual([[fn.name, "ok"], [fn.name, "error"]])
    expect(JSON.parse(results[0].result)).toEqual({ status: 200, path: "/pets/42" })
    expect(results[1].result).toContain("validation_failed")
    expect(target.requests.at(-1)!.path).toBe("/pets/42")

    // the connector call is recorded with the task, as the run's own connector tools are (the records are
    // written in batches, a moment after the call)
    const invocations = () =>
      withDatabase(
        node,
        async (db) =>
          (await db.query("SELECT task_id, operation_id FROM connector_invocations WHERE task_id = $1", [task.id])).rows
      )
    let recorded = await invocations()
    for (const deadline = Date.now() + 10_000; recorded.length === 0 && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 100))
      recorded = await invocations()
    }
    expect(recorded).toMatchObject([{ task_id: task.id }])
    // ctx.files wrote into the agent's workspace
    const files = (await call(node, apiKey, "GET", `/v1/files?agent_id=${agent.id}`)).body.items
    expect(files.map((f: any) => f.name)).toEqual(["pets/42.json"])

    // detached: the tool is gone from the next run
    expect((await call(node, apiKey, "DELETE", `/v1/agents/${agent.id}/functions/${fn.id}`)).status).toBe(204)
    expect((await call(node, apiKey, "GET", `/v1/agents/${agent.id}/functions`)).body.items).toEqual([])
    expectError(await call(node, apiKey, "DELETE", `/v1/agents/${agent.id}/functions/${fn.id}`), 404, "not_found")
  })

  it("ctx.files answers a run with the same shapes as a REST invoke", async () => {
    const { node, apiKey } = world
    const prefix = `shapes-${Date.now().toString(36)}/`
    const uploaded = await node.fetch(`/v1/files?name=${prefix}note.txt`, {
      method: "POST",
      apiKey,
      headers: { "content-type": "text/plain" },
      body: "hello"
    })
    expect(uploaded.status).toBe(201)
    const fn = await createFunction(
      node,
      apiKey,
      `export default async (input, ctx) =>
        ({ list: await ctx.files.list(${JSON.stringify(prefix)}), read: await ctx.files.read("${prefix}note.txt") })`
    )
    const rest = await call(node, apiKey, "POST", `/v1/functions/${fn.id}/invoke`, {})
    expect(rest.status, JSON.stringify(rest.body)).toBe(200)
    expect(rest.body.output).toEqual({
      list: {
        files: [{ name: `${prefix}note.txt`, size: 5, content_type: "text/plain", scope: "organization" }],
        next_cursor: null
      },
      read: { name: `${prefix}note.txt`, text: "hello", offset: 0, bytes_read: 5, truncated: false }
    })
    const agent = await createAgent(node, apiKey, {
      name: "Shapes",
      model: {
        provider: "scripted",
        script: [{ tool_calls: [{ name: fn.name, arguments: {} }] }, { text: "{{last_tool_result}}" }]
      }
    })
    await call(node, apiKey, "PUT", `/v1/agents/${agent.id}/functions/${fn.id}`)
    const task = await (await invokeAgent(node, apiKey, agent.id, "shapes")).json()
    expect(task.status, JSON.stringify(task)).toBe("completed")
    expect(JSON.parse(task.result)).toEqual(rest.body.output)
  })

  it("a function whose input is not an object takes it as `input`", async () => {
    const { node, apiKey } = world
    const fn = await createFunction(node, apiKey, "export default async (n) => n * 2", {
      input_schema: { type: "integer" }
    })
    const agent = await createAgent(node, apiKey, {
      name: "Doubler",
      model: {
        provider: "scripted",
        script: [{ tool_calls: [{ name: fn.name, arguments: { input: 21 } }] }, { text: "{{last_tool_result}}" }]
      }
    })
    await call(node, apiKey, "PUT", `/v1/agents/${agent.id}/functions/${fn.id}`)
    const task = await (await invokeAgent(node, apiKey, agent.id, "double")).json()
    expect(task.result).toBe("42")
  })
})

describe("custom function MCP tools, through the SDK client", () => {
  it("list_functions, create_function and invoke_function answer as REST does", async () => {
    const { node } = world
    const admin = await signedUpAdmin(node)
    const client = await connectSdkClient(node, admin.email, "functions")
    const names = (await client.listTools()).tools.map((t) => t.name)
    for (const name of ["list_functions", "create_function", "invoke_function"]) expect(names).toContain(name)
    const created = await client.callTool({
      name: "create_function",
      arguments: { name: "mcp_add", code: "export default async ({ a, b }) => a + b" }
    })
    expect(created.isError).toBeFalsy()
    const fn = created.structuredContent as any
    expect(fn).toMatchObject({ name: "mcp_add", version: 1 })
    const listed = await client.callTool({ name: "list_functions", arguments: {} })
    expect((listed.structuredContent as any).items.map((f: any) => f.id)).toContain(fn.id)
    const invoked = await client.callTool({
      name: "invoke_function",
      arguments: { function_id: fn.id, input: { a: 2, b: 3 } }
    })
    expect(invoked.structuredContent).toMatchObject({ output: 5, logs: [], version: 1 })
    const thrown = await client.callTool({
      name: "create_function",
      arguments: { name: "mcp_throw", code: "export default async () => { throw new Error('mcp boom') }" }
    })
    const boom = await client.callTool({
      name: "invoke_function",
      arguments: { function_id: (thrown.structuredContent as any).id }
    })
    expect(boom.isError).toBe(true)
    expect(boom.structuredContent).toMatchObject({ error: { code: "function_error" } })
    // paged as REST pages: two functions, one a page
    const page = (await client.callTool({ name: "list_functions", arguments: { limit: 1 } })).structuredContent as any
    expect(page).toMatchObject({ total: 2, items: [{ id: fn.id }] })
    const rest = (await client.callTool({ name: "list_functions", arguments: { cursor: page.next_cursor } }))
      .structuredContent as any
    expect(rest).toMatchObject({ total: 2, next_cursor: null, items: [{ name: "mcp_throw" }] })
    await client.close()
  })
})
