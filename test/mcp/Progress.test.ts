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
import { eventually } from "../support/Poll.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { mcpPost, obtainTokens, openSession, signedUpAdmin } from "./support.js"

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

  it("a call the client cancels (notifications/cancelled) stops: no result, its task cancelled", async () => {
    const admin = await signedUpAdmin(node)
    const agent = await createAgent(node, admin.api_key, {
      name: "slow",
      model: { provider: "scripted", script: [{ text: "Too late.", delay_ms: 120_000 }] }
    })
    const token = (await obtainTokens(node, admin.email)).tokens.access_token
    const client = new Client({ name: "cancel-test", version: "1.0.0" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${node.baseUrl}/mcp/`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } }
      })
    )
    const progress: Array<Progress> = []
    const aborted = new AbortController()
    const call = client.callTool(
      { name: "invoke_agent", arguments: { agent_id: agent.id, text: "take your time" } },
      undefined,
      { signal: aborted.signal, onprogress: (p) => void progress.push(p) }
    )
    // the SDK sends notifications/cancelled when the caller aborts
    const started = await eventually(() => progress.find((p) => p.message === "Task started.") ? progress : undefined)
    const taskId = /^Task (\S+) created\.$/.exec(started[0]!.message!)![1]!
    aborted.abort("changed my mind")
    await expect(call).rejects.toThrow(/changed my mind/)
    const task = await eventually(async () => {
      const read = await (await node.fetch(`/v1/tasks/${taskId}`, { apiKey: admin.api_key })).json()
      return read.status === "executing" ? undefined : read
    })
    expect(task.status).toBe("cancelled")
    // the session goes on
    expect((await client.callTool({ name: "get_task", arguments: { task_id: taskId } })).structuredContent)
      .toMatchObject({ id: taskId, status: "cancelled" })
    await client.close()
  })

  /** An invoke_agent call `call-1`, without a progressToken, whose task runs (its model answers in 2 min). */
  const slowCallRunning = async () => {
    const admin = await signedUpAdmin(node)
    const agent = await createAgent(node, admin.api_key, {
      name: "slow",
      model: { provider: "scripted", script: [{ text: "Too late.", delay_ms: 120_000 }] }
    })
    const token = (await obtainTokens(node, admin.email)).tokens.access_token
    const session = await openSession(node.baseUrl, token)
    const headers = { authorization: `Bearer ${token}`, "mcp-session-id": session }
    const call = mcpPost(node.baseUrl, {
      jsonrpc: "2.0",
      id: "call-1",
      method: "tools/call",
      params: { name: "invoke_agent", arguments: { agent_id: agent.id, text: "take your time" } }
    }, headers)
    const running = await eventually(async () => {
      const tasks = await (await node.fetch("/v1/tasks", { apiKey: admin.api_key })).json()
      return tasks.items.find((t: { status: string; agent_id: string }) =>
        t.status === "executing" && t.agent_id === agent.id
      )
    })
    return { admin, token, session, headers, call, running }
  }

  /** The stopped call is answered 202 without a JSON-RPC response, and its task ends cancelled. */
  const expectStoppedAndCancelled = async ({ admin, call, running }: Awaited<ReturnType<typeof slowCallRunning>>) => {
    const answer = await call
    expect(answer.status).toBe(202)
    expect(await answer.text()).toBe("")
    const task = await eventually(async () => {
      const read = await (await node.fetch(`/v1/tasks/${running.id}`, { apiKey: admin.api_key })).json()
      return read.status === "executing" ? undefined : read
    })
    expect(task.status).toBe("cancelled")
  }

  it("a cancelled call without a progressToken is answered 202 with no JSON-RPC response", async () => {
    const stopped = await slowCallRunning()
    const { admin, headers, running, session, token } = stopped
    // another session's cancellation, or one naming another id, does not reach it
    const other = await openSession(node.baseUrl, token)
    for (const [sessionId, requestId] of [[other, "call-1"], [session, 1]] as const) {
      const notified = await mcpPost(node.baseUrl, {
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId }
      }, { ...headers, "mcp-session-id": sessionId })
      expect(notified.status).toBe(202)
    }
    expect((await (await node.fetch(`/v1/tasks/${running.id}`, { apiKey: admin.api_key })).json()).status)
      .toBe("executing")
    const cancelled = await mcpPost(node.baseUrl, {
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: "call-1", reason: "no longer needed" }
    }, headers)
    expect(cancelled.status).toBe(202)
    await expectStoppedAndCancelled(stopped)
  })

  it("a session ended with DELETE stops its calls in flight: the invoke's task is cancelled", async () => {
    const stopped = await slowCallRunning()
    const { admin, headers, running, token } = stopped
    // another session of the same user ending leaves it running
    const other = await openSession(node.baseUrl, token)
    const otherEnded = await fetch(`${node.baseUrl}/mcp/`, {
      method: "DELETE",
      headers: { ...headers, "mcp-session-id": other }
    })
    expect(otherEnded.status).toBe(204)
    expect((await (await node.fetch(`/v1/tasks/${running.id}`, { apiKey: admin.api_key })).json()).status)
      .toBe("executing")
    const ended = await fetch(`${node.baseUrl}/mcp/`, { method: "DELETE", headers })
    expect(ended.status).toBe(204)
    await expectStoppedAndCancelled(stopped)
  })
})
