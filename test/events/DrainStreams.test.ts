import { afterAll, describe, expect, it } from "vitest"
import { bootstrapOrg } from "../support/Bootstrap.js"
import { type NodeProcess, spawnNode } from "../support/NodeProcess.js"
import { migratedDatabase } from "../support/TestDatabase.js"
import { testEnvironment } from "../support/TestNode.js"

let node: NodeProcess | undefined
afterAll(() => node?.stop("SIGKILL"))

describe("event streams at shutdown", () => {
  it("a SIGTERM ends open event streams at once: the drain does not wait out its grace", async () => {
    const env = await testEnvironment({
      DATABASE_URL: await migratedDatabase(),
      SWITCHYARD_SHUTDOWN_GRACE: "60 seconds"
    })
    node = spawnNode(env)
    const [{ api_key: apiKey }] = await Promise.all([bootstrapOrg(env, "Streams", "s@o.test"), node.waitReady()])
    const response = await fetch(`${node.baseUrl}/v1/events`, {
      headers: { "x-api-key": apiKey, accept: "text/event-stream", "last-event-id": "0" }
    })
    expect(response.status).toBe(200)
    const reader = response.body!.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("retry:")
    const ended = (async () => {
      for (;;) if ((await reader.read()).done) return Date.now()
    })()
    const stopped = Date.now()
    const code = await node.stop("SIGTERM")
    const streamEnd = await ended
    expect(code).toBe(0)
    expect(streamEnd - stopped).toBeLessThan(15_000)
    expect(Date.now() - stopped).toBeLessThan(30_000)
  }, 120_000)
})
