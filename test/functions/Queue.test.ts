import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectError } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createFunction, invokeFunction } from "./support.js"

/**
 * Calls waiting for a sandbox worker: a call's timeout_ms counts from when it was asked, one organization
 * cannot hold every worker, and an abandoned call gives its worker back. Two workers, as on a 2-core node.
 */

let node: TestNode
beforeAll(async () => {
  // nothing here is about stopping: the node's stop need not wait long for its connections
  node = await startTestNode({ SWITCHYARD_FUNCTION_WORKERS: "2", SWITCHYARD_SHUTDOWN_GRACE: "1 second" })
})
afterAll(() => node?.stop())

// a worker is held only by code running (a function awaiting `ctx` lets it go; one awaiting nothing fails at
// once), so holding one means spinning
const SPIN = "export default async () => { while (true) {} }"
const QUICK = "export default async () => 1"
// spinners' timeout: the quick calls' timeouts are well under it, so a quick call held for it would fail;
// it is the time (and the cores) tests 1 and 2 spin for
const SPIN_MS = 12_000

/** An organization with a spinning function (timeout_ms `spinMs`) and a quick one (timeout_ms `quickMs`). */
const tenant = async (quickMs = 1_000, spinMs = SPIN_MS) => {
  const { api_key } = await node.bootstrap()
  const spin = await createFunction(node, api_key, SPIN, { timeout_ms: spinMs })
  const quick = await createFunction(node, api_key, QUICK, { timeout_ms: quickMs })
  return { key: api_key, spin: spin.id, quick: quick.id }
}

// long enough for the spinning calls to be on their workers on a busy machine (CI runs files in parallel)
const settle = () => new Promise((resolve) => setTimeout(resolve, 2_000))

describe("the sandbox queue", () => {
  it("a call still queued at its deadline fails with function_timeout, saying it waited", async () => {
    const [a, b, c] = await Promise.all([tenant(), tenant(), tenant()])
    // two organizations' spinning calls hold both workers
    const spinning = [invokeFunction(node, a.key, a.spin), invokeFunction(node, c.key, c.spin)]
    await settle()
    const result = await invokeFunction(node, b.key, b.quick)
    expectError(result, 504, "function_timeout")
    expect(result.body.error.message).toContain("waited for a free sandbox")
    expect(result.body.error.message).toContain("1000 ms")
    for (const r of await Promise.all(spinning)) expectError(r, 504, "function_timeout")
  }, 60_000)

  it("one organization cannot hold every worker: another's call runs while its calls spin", async () => {
    // b's timeout leaves a worker time to start on a busy machine, and ends well before the spinners'
    const [a, b] = await Promise.all([tenant(), tenant(SPIN_MS / 2)])
    const spinning = [invokeFunction(node, a.key, a.spin), invokeFunction(node, a.key, a.spin)]
    await settle()
    // held until the spinners' timeouts, its own would have passed in the queue (504)
    const result = await invokeFunction(node, b.key, b.quick)
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(result.body.output).toBe(1)
    expect(result.body.duration_ms).toBeLessThanOrEqual(SPIN_MS / 2)
    // a's calls end at their own deadlines, the second having waited for a worker (b's, once b's call ended)
    for (const r of await Promise.all(spinning)) expectError(r, 504, "function_timeout")
  }, 60_000)

  it("an abandoned call (the client went away) frees its worker: the next call answers", async () => {
    // the spinners are terminated when abandoned, so their long timeout costs nothing; it leaves the quick
    // call's (half of it) time for new workers to start on a busy machine
    const [a, b, c] = await Promise.all([tenant(1_000, 20_000), tenant(1_000, 20_000), tenant(10_000)])
    const aborts = [new AbortController(), new AbortController()]
    const abandoned = [a, b].map((t, i) =>
      node.fetch(`/v1/functions/${t.spin}/invoke`, {
        method: "POST",
        apiKey: t.key,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ input: {} }),
        signal: aborts[i]!.signal
      }).catch((e: unknown) => e)
    )
    await settle()
    for (const abort of aborts) abort.abort()
    await Promise.all(abandoned)
    // both workers spun in abandoned calls; they are terminated and replaced, not left spinning until their
    // timeouts (a call with half that timeout asked now would pass its deadline in the queue)
    const result = await invokeFunction(node, c.key, c.quick)
    expect(result.status, JSON.stringify(result.body)).toBe(200)
    expect(result.body.output).toBe(1)
  }, 60_000)
})
