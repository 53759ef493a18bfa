import { Effect, Exit, Redacted, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as EmbeddedPostgres from "../../src/db/EmbeddedPostgres.js"
import { bootstrapOrg } from "../support/Bootstrap.js"
import { type NodeProcess, spawnNode } from "../support/NodeProcess.js"
import { freePort } from "../support/ports.js"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "switchyard-outage-"))
Fs.chmodSync(dataDir, 0o711)
let node: NodeProcess | undefined
const scope = Effect.runSync(Scope.make())
afterAll(async () => {
  // killed: its database is gone, so a graceful stop would wait out the grace and its 30 s past it
  // (test/node/HardStop.test.ts checks that wait)
  await node?.stop("SIGKILL")
  await Effect.runPromise(Scope.close(scope, Exit.void))
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

// Storage errors end at the repositories as defects; the request pipeline still tells a lost database apart
describe("storage errors past the repositories", () => {
  it("a lost database answers 503 database_unavailable from every area's repository, never 500", async () => {
    const pg = await Effect.runPromise(
      EmbeddedPostgres.make({ dataDir, port: await freePort(), settings: { fsync: "off" } }).pipe(Scope.extend(scope))
    )
    const env = {
      DATABASE_URL: Redacted.value(pg.url),
      SWITCHYARD_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
      SWITCHYARD_HTTP_PORT: String(await freePort()),
      SWITCHYARD_RUNNER_PORT: String(await freePort()),
      SWITCHYARD_RUNNER_HOST: "127.0.0.1",
      SWITCHYARD_BOOTSTRAP_ON_FIRST_START: "false",
      // the key stays verified in memory: each request below reaches its own area's repository
      SWITCHYARD_API_KEY_CACHE_TTL: "10 minutes"
    }
    node = spawnNode(env)
    await node.waitReady()
    const { api_key: apiKey } = await bootstrapOrg(env, "O", "o@o.test")
    const call = (method: string, path: string, body?: unknown) =>
      fetch(node!.baseUrl + path, {
        method,
        headers: { "x-api-key": apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(20_000)
      }).then(async (r) => ({ status: r.status, body: await r.json() }))
    const requests: ReadonlyArray<readonly [string, string, unknown?]> = [
      ["GET", "/v1/me"],
      ["GET", "/v1/members"],
      ["GET", "/v1/agents"],
      ["GET", "/v1/groups"],
      ["POST", "/v1/groups", { name: "g" }],
      ["GET", "/v1/skills"],
      ["GET", "/v1/approvals"],
      ["GET", "/v1/tools?type=connector"],
      ["GET", "/v1/audit-logs"],
      ["GET", "/v1/model-providers"],
      ["GET", "/v1/sso"],
      ["GET", "/v1/oauth/authorizations"]
    ]
    // while the database is up, each is served (no route is missing, nothing fails)
    for (const [method, path, body] of requests) {
      const answer = await call(method, path, body)
      expect(answer.status < 400 || answer.body.error.code === "not_found", `${path}: ${answer.status}`).toBe(true)
    }

    await Effect.runPromise(Scope.close(scope, Exit.void))
    for (const [method, path, body] of requests) {
      const answer = await call(method, path, body)
      expect({ path, status: answer.status, code: answer.body.error?.code }).toEqual({
        path,
        status: 503,
        code: "database_unavailable"
      })
    }
  }, 180_000)
})
