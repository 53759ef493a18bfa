/**
 * MCP progress (issue 22): `invoke_agent` called with a progressToken answers over the POST's event stream
 * (Streamable HTTP) with a `notifications/progress` per task event as it is committed (created, started, each
 * model call, each tool call, the end), `progress` increasing, then the result. Through the MCP SDK's client.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Progress } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent } from "../agents/support.js"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { obtainTokens, signedUpAdmin } from "./support.js"

let node: TestNode
let target: TargetServer
beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
  target = await startTargetServer()
})
afterAll(async () => {
  await node?.stop()
  await target?.close()
})

/** An organization with a pet-store connection, an agent that calls it, and an MCP client signed in as its admin. */
const setUp = async () => {
  const admin = await signedUpAdmin(node)
  const connector = await createConnector(node, admin.api_key, petstore(target.url))
  const connection = await createConnection(node, admin.api_key, connector.id, {
    name: "pets",
    credentials: { type: "api_key", value: "k" }
  })
  const agent = await createAgent(node, admin.api_key, {
    name: "progress",
    model: {
      provider: "scripted",
      script: [
        { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "7" } } }] },
        { text: "Rex.", delay_ms: 100 }
      ]
    },
    skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
  })
  const token = (await obtainTokens(node, admin.email)).tokens.access_token
  const client = new Client({ name: "progress-test", version: "1.0.0" })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${node.baseUrl}/mcp/`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } }
    })
  )
  return { agent, client }
}

describe("MCP progress of invoke_agent", () => {
  it("sends a progress notification per task event, increasing, with a message, then the result", async () => {
    const { agent, client } = await setUp()
    const progress: Array<Progress> = []
    const answer = await client.callTool(
      { name: "invoke_agent", arguments: { agent_id: agent.id, text: "which pet?" } },
      undefined,
      { onprogress: (p) => void progress.push(p), resetTimeoutOnProgress: true }
    )
    expect(answer.isError).toBeFalsy()
    expect(answer.structuredContent).toMatchObject({ status: "completed", result: "Rex." })
    const taskId = (answer.structuredContent as { id: string }).id

    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1))
    expect(progress.map((p) => p.message)).toEqual([
      `Task ${taskId} created.`,
      "Task started.",
      expect.stringMatching(/^Model call 1: scripted, \d+ in \/ \d+ out tokens \(tool_calls\)\.$/),
      "Tool call 1: getPet (ok, HTTP 200).",
      expect.stringMatching(/^Model call 2: scripted, \d+ in \/ \d+ out tokens \(stop\)\.$/),
      "Task completed."
    ])
    await client.close()
  })

  it("without a progressToken the call answers as before", async () => {
    const { agent, client } = await setUp()
    const answer = await client.callTool({
      name: "invoke_agent",
      arguments: { agent_id: agent.id, text: "which pet?" }
    })
    expect(answer.structuredContent).toMatchObject({ status: "completed", result: "Rex." })
    await client.close()
  })

  it("a failing task reports its end as progress, and the result says so", async () => {
    const admin = await signedUpAdmin(node)
    const agent = await createAgent(node, admin.api_key, {
      name: "fails",
      // one turn for a run that asks for two: the second model call fails (script_exhausted)
      model: { provider: "scripted", script: [{ tool_calls: [{ name: "nothing_here", arguments: {} }] }] }
    })
    const token = (await obtainTokens(node, admin.email)).tokens.access_token
    const client = new Client({ name: "progress-test", version: "1.0.0" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${node.baseUrl}/mcp/`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } }
      })
    )
    const progress: Array<Progress> = []
    const answer = await client.callTool(
      { name: "invoke_agent", arguments: { agent_id: agent.id, text: "go" } },
      undefined,
      { onprogress: (p) => void progress.push(p) }
    )
    expect(answer.structuredContent).toMatchObject({ status: "error" })
    expect(progress.at(-1)!.message).toBe("Task error.")
    expect(progress.map((p) => p.progress)).toEqual(progress.map((_, i) => i + 1))
    await client.close()
  })
})
