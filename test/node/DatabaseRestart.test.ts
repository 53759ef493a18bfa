import { Effect, Exit, Redacted, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as EmbeddedPostgres from "../../src/db/EmbeddedPostgres.js"
import { bootstrapOrg } from "../support/Bootstrap.js"
import { type NodeProcess, spawnNode } from "../support/NodeProcess.js"
import { freePort } from "../support/ports.js"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "switchyard-dbrestart-"))
Fs.chmodSync(dataDir, 0o711)
let node: NodeProcess | undefined
let scope = Effect.runSync(Scope.make())
afterAll(async () => {
  await node?.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

const startDatabase = (port: number) =>
  Effect.runPromise(EmbeddedPostgres.make({ dataDir, port, settings: { fsync: "off" } }).pipe(Scope.extend(scope)))

describe("the database restarts under a running node", () => {
  it("answers 503 with our error body while it is down, then recovers by itself", async () => {
    const pgPort = await freePort()
    const pg = await startDatabase(pgPort)
    const env = {
      DATABASE_URL: Redacted.value(pg.url),
      SWITCHYARD_SECRET_KEY: Buffer.alloc(32, 9).toString("base64"),
      SWITCHYARD_HTTP_PORT: String(await freePort()),
      SWITCHYARD_RUNNER_PORT: String(await freePort()),
      SWITCHYARD_RUNNER_HOST: "127.0.0.1",
      SWITCHYARD_BOOTSTRAP_ON_FIRST_START: "false",
      SWITCHYARD_API_KEY_CACHE_TTL: "0 seconds"
    }
    node = spawnNode(env)
    await node.waitReady()
    const { api_key: apiKey } = await bootstrapOrg(env, "R", "r@o.test")
    const me = () =>
      fetch(`${node!.baseUrl}/v1/me`, { headers: { "x-api-key": apiKey }, signal: AbortSignal.timeout(20_000) }).then(
        async (r) => ({ status: r.status, body: await r.json() })
      )
    expect((await me()).status).toBe(200)

    // stop the database (the node's lock and pool connections die with it)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    scope = Effect.runSync(Scope.make())
    const down = await me()
    expect(down.status).toBe(503)
    expect(down.body.error.code).toBe("database_unavailable")
    expect((await fetch(`${node.baseUrl}/readyz`, { signal: AbortSignal.timeout(20_000) })).status).toBe(503)

    // the same database comes back on the same port: the node finds it again
    await startDatabase(pgPort)
    const deadline = Date.now() + 60_000
    let status = 0
    while (Date.now() < deadline) {
      status = (await me().catch(() => ({ status: 0 }))).status
      if (status === 200) break
      await new Promise((r) => setTimeout(r, 500))
    }
    expect(status).toBe(200)
    await node.waitReady(60_000)

    // and the cluster works again: a task is delivered to its entity, runs and answers
    const post = (path: string, body: unknown) =>
      fetch(node!.baseUrl + path, {
        method: "POST",
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(60_000)
      }).then((r) => r.json())
    const agent = await post("/v1/agents", {
      name: "after",
      model: { provider: "scripted", script: [{ text: "back" }] }
    })
    const task = await post(`/v1/agents/${agent.id}/invoke`, {
      input: { text: "hi", user: { id: "u", email: "u@example.com" } }
    })
    expect(task).toMatchObject({ status: "completed", result: "back" })
  }, 180_000)
})
