import * as Net from "node:net"
import { describe, expect, it } from "vitest"
import { RECHECK_MS } from "../../src/tasks/TaskCompletions.js"
import { createAgent, user } from "../agents/support.js"
import { createFunction, invokeFunction } from "../functions/support.js"
import { type LogLine, startTestNode, type TestNode } from "../support/TestNode.js"

describe("stopping a node with a request that never completes", () => {
  it("cuts the request's connection once SWITCHYARD_SHUTDOWN_GRACE has passed, and stops", async () => {
    const node = await startTestNode({ SWITCHYARD_SHUTDOWN_GRACE: "1 second" })
    const { port } = new URL(node.baseUrl)
    // a request whose body never comes: its connection is busy, not idle, until something cuts it
    const socket = Net.connect(Number(port), "127.0.0.1")
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject))
    const closed = new Promise<string>((resolve) => {
      let answer = ""
      socket.on("data", (chunk) => answer += String(chunk))
      socket.once("close", () => resolve(answer))
    })
    socket.write(
      "POST /v1/functions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
        "content-length: 100\r\n\r\n{\"name\":"
    )
    await new Promise((resolve) => setTimeout(resolve, 200))
    // Node's own request timeout (300 s by default) would end it long after this test's timeout
    await node.stop()
    // the connection was cut, not answered
    expect(await closed).toBe("")
  })
})

/**
 * With nothing in flight a stop does not wait for SWITCHYARD_SHUTDOWN_GRACE: a grace far longer than a stop
 * takes, and the stop must end well before it (a behaviour check, not a benchmark: waiting for the grace is
 * 30 s, a stop that need not wait takes ~1 s).
 */
const GRACE = { SWITCHYARD_SHUTDOWN_GRACE: "30 seconds" }
const stopsBeforeTheGrace = async (node: TestNode) => {
  const started = performance.now()
  await node.stop()
  expect(performance.now() - started).toBeLessThan(10_000)
}
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Sends `init` to `path` twice at once, and gives up after `ms` (the client goes away: AbortController). */
const abandon = async (node: TestNode, path: string, init: RequestInit & { apiKey: string }, ms: number) => {
  const abort = new AbortController()
  const responses = [1, 2].map(() =>
    node.fetch(path, { ...init, signal: abort.signal }).then(async (r) => {
      // a stream's head comes at once: read it until the abort
      await r.text()
      return r.status
    }).catch((e: unknown) => e)
  )
  await pause(ms)
  abort.abort()
  for (const response of await Promise.all(responses)) expect(response).toBeInstanceOf(Error)
}
const post = (body: unknown) => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body)
})

describe("stopping a node with nothing in flight", () => {
  it(
    "does not wait for a connection that never sent a request (a client's spare, as a browser preconnects)",
    async () => {
      const node = await startTestNode(GRACE)
      const socket = Net.connect(Number(new URL(node.baseUrl).port), "127.0.0.1")
      await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject))
      const closed = new Promise<void>((resolve) => socket.on("error", () => undefined).once("close", () => resolve()))
      await stopsBeforeTheGrace(node)
      await closed
    },
    60_000
  )

  it.each([["fast path (FastTasks)", "true"], ["general stack", "false"]])(
    "does not wait after sync invokes whose clients went away, agent invokes through the %s",
    async (_, fastPath) => {
      const node = await startTestNode({
        ...GRACE,
        SWITCHYARD_TASK_FAST_PATH: fastPath,
        SWITCHYARD_FUNCTION_WORKERS: "2"
      })
      const { api_key: apiKey } = await node.bootstrap()
      const spin = await createFunction(node, apiKey, "export default async () => { while (true) {} }", {
        timeout_ms: 20_000
      })
      const slow = { text: "late", delay_ms: 20_000 }
      const agent = await createAgent(node, apiKey, {
        name: "slow",
        model: { provider: "scripted", script: [slow, slow, slow] }
      })
      // a function invoke
      await abandon(node, `/v1/functions/${spin.id}/invoke`, { apiKey, ...post({ input: {} }) }, 1_000)
      // an agent invoke, by a key verified just now (the fast path takes it while that is recent)
      expect((await node.fetch("/v1/agents", { apiKey })).status).toBe(200)
      const invoke = post({ input: { text: "hi", user } })
      await abandon(node, `/v1/agents/${agent.id}/invoke`, { apiKey, ...invoke }, 500)
      // a streamed one (src/events/InvokeStream.ts)
      const streamed = { ...invoke, headers: { ...invoke.headers, accept: "text/event-stream" } }
      await abandon(node, `/v1/agents/${agent.id}/invoke`, { apiKey, ...streamed }, 500)
      // a call answered after them
      const quick = await createFunction(node, apiKey, "export default async () => 1")
      expect((await invokeFunction(node, apiKey, quick.id)).status).toBe(200)
      await stopsBeforeTheGrace(node)
    },
    60_000
  )

  it("leaves nothing of a fast-path invoke whose client went away running past the stop", async () => {
    const logs: Array<LogLine> = []
    const node = await startTestNode(GRACE, { logs })
    const { api_key: apiKey } = await node.bootstrap()
    const agent = await createAgent(node, apiKey, {
      name: "slow",
      model: { provider: "scripted", script: [{ text: "late", delay_ms: 3_000 }, { text: "late", delay_ms: 3_000 }] }
    })
    expect((await node.fetch("/v1/agents", { apiKey })).status).toBe(200)
    await abandon(node, `/v1/agents/${agent.id}/invoke`, { apiKey, ...post({ input: { text: "hi", user } }) }, 500)
    await stopsBeforeTheGrace(node)
    // past the next recheck of a wait for the task: one left running read it from the database the stop closed
    await pause(RECHECK_MS + 1_000)
    expect(logs.filter((line) => String(line.message).includes("unhandled error"))).toEqual([])
  }, 60_000)

  it("does not wait after an event stream whose client went away", async () => {
    const node = await startTestNode(GRACE)
    const { api_key: apiKey } = await node.bootstrap()
    for (const filter of ["", "?types=task.created,task.completed"]) {
      await abandon(node, `/v1/events${filter}`, { apiKey, headers: { accept: "text/event-stream" } }, 1_000)
    }
    expect((await node.fetch("/v1/agents", { apiKey })).status).toBe(200)
    await stopsBeforeTheGrace(node)
  }, 60_000)
})
