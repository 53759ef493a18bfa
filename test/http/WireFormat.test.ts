import * as Http from "node:http"
import * as Zlib from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
let apiKey: string
beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_MAX_BODY_BYTES: "65536" })
  apiKey = (await node.bootstrap()).api_key
})
afterAll(() => node?.stop())

const post = (path: string, body: BodyInit, headers: Record<string, string> = { "content-type": "application/json" }) =>
  node.fetch(path, { method: "POST", apiKey, headers, body })

const expectError = async (response: Response, status: number, code: string) => {
  expect(response.status).toBe(status)
  expect(response.headers.get("content-type")).toContain("application/json")
  const body = await response.json()
  expect(Object.keys(body)).toEqual(["error"])
  expect(body.error.code).toBe(code)
  expect(typeof body.error.message).toBe("string")
  expect(body.error.message.length).toBeGreaterThan(10)
  expect(body.error.request_id).toBe(response.headers.get("x-request-id"))
  expect(JSON.stringify(body)).not.toMatch(/at \/|node_modules|SqlError|stack/)
  return body.error
}

describe("wire format", () => {
  it("puts x-request-id on every response and honours a sane incoming one", async () => {
    for (const path of ["/healthz", "/readyz", "/v1/me", "/nope", "/openapi.json"]) {
      const response = await node.fetch(path)
      expect(response.headers.get("x-request-id")).toMatch(/^[A-Za-z0-9._:-]+$/)
      // read to the end: a response left unread keeps its connection busy, and the node's stop waited ~60 s on it
      await response.arrayBuffer()
    }
    const echoed = await node.fetch("/healthz", { headers: { "x-request-id": "trace-123" } })
    expect(echoed.headers.get("x-request-id")).toBe("trace-123")
    const replaced = await node.fetch("/healthz", { headers: { "x-request-id": "bad id\twith junk" } })
    expect(replaced.headers.get("x-request-id")).not.toContain("junk")
  })

  it("answers unknown routes with 404 and wrong methods with 405 in the error body", async () => {
    await expectError(await node.fetch("/v1/does-not-exist", { apiKey }), 404, "route_not_found")
    const wrong = await node.fetch("/v1/me", { method: "DELETE", apiKey })
    await expectError(wrong, 405, "method_not_allowed")
    expect(wrong.headers.get("allow")).toBe("GET")
  })

  it("answers a body that is not JSON with 400", async () => {
    await expectError(await post("/v1/api-keys", "{not json"), 400, "invalid_json")
  })

  it("names the failing fields on validation errors", async () => {
    const error = await expectError(
      await post("/v1/api-keys", JSON.stringify({ kind: "wizard" })),
      400,
      "validation_failed"
    )
    const paths = error.details.issues.map((i: any) => i.path)
    expect(paths).toEqual(expect.arrayContaining(["kind", "name"]))
    // a union's members are one issue that names every accepted value, not one issue each
    expect(error.details.issues.filter((i: any) => i.path === "kind")).toEqual([
      { path: "kind", message: "Expected \"organization\" | \"personal\", actual \"wizard\"" }
    ])
    const email = await expectError(
      await post("/v1/members", JSON.stringify({ email: "not-an-email" })),
      400,
      "validation_failed"
    )
    expect(email.details.issues[0].path).toBe("email")
    expect(email.message).toContain("e-mail")
  })

  it.each([
    ["null", "null"],
    ["an array", "[]"],
    ["a number", "42"],
    ["a string", "\"text\""],
    ["an overlong name", JSON.stringify({ name: "x".repeat(5000) })],
    ["a wrong type", JSON.stringify({ name: 1 })],
    ["a deep array", "[".repeat(5000) + "]".repeat(5000)],
    ["a deep object", "{\"a\":".repeat(3000) + "1" + "}".repeat(3000)]
  ])(
    "never answers 500 to %s",
    async (_, body) => {
      const response = await post("/v1/api-keys", body)
      expect(response.status).toBeGreaterThanOrEqual(400)
      expect(response.status).toBeLessThan(500)
    }
  )

  it("answers a too-large body with 413, declared or streamed", async () => {
    const big = JSON.stringify({ name: "x".repeat(70_000) })
    await expectError(await post("/v1/api-keys", big), 413, "payload_too_large")
    // chunked, no content-length: the limit applies while reading and the connection is cut (no 500)
    const streamed = await new Promise<number | "closed">((resolve) => {
      const request = Http.request(`${node.baseUrl}/v1/api-keys`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": apiKey, "transfer-encoding": "chunked" }
      })
      request.on("response", (response) => resolve(response.statusCode!))
      request.on("error", () => resolve("closed"))
      for (let i = 0; i < 10; i++) request.write(big.slice(i * 7000, (i + 1) * 7000))
      request.end(big.slice(70_000))
    })
    expect([413, "closed"]).toContain(streamed)
    expect((await node.fetch("/healthz")).status).toBe(200)
  })

  it("answers a non-JSON content type with 415", async () => {
    await expectError(
      await post("/v1/api-keys", "name=x", { "content-type": "text/plain" }),
      415,
      "unsupported_media_type"
    )
  })

  it("serves OpenAPI 3.1 and the docs page", async () => {
    const spec = await (await node.fetch("/openapi.json")).json()
    expect(spec.openapi).toBe("3.1.0")
    expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining(["/v1/me", "/v1/api-keys", "/healthz", "/readyz"]))
    expect(JSON.stringify(spec.components.securitySchemes)).toContain("x-api-key")
    const docs = await node.fetch("/docs")
    expect(docs.status).toBe(200)
    expect(docs.headers.get("content-type")).toContain("text/html")
    await docs.arrayBuffer()
  })

  it("sends /docs and /openapi.json gzipped to a client that accepts it, and as they are to one that does not", async () => {
    // raw bytes (fetch would undo the encoding): what goes on the wire
    const raw = (path: string, acceptEncoding?: string) =>
      new Promise<{ headers: Http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        const request = Http.get(
          `${node.baseUrl}${path}`,
          { headers: acceptEncoding === undefined ? {} : { "accept-encoding": acceptEncoding } },
          (response) => {
            const chunks: Array<Buffer> = []
            response.on("data", (c: Buffer) => chunks.push(c))
            response.on("end", () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }))
          }
        )
        request.on("error", reject)
      })
    for (const path of ["/docs", "/openapi.json"]) {
      const plain = await raw(path)
      expect(plain.headers["content-encoding"], path).toBeUndefined()
      expect(plain.headers.vary, path).toContain("accept-encoding")
      for (let i = 0; i < 2; i++) {
        const gzipped = await raw(path, "br, gzip, deflate")
        expect(gzipped.headers["content-encoding"], path).toBe("gzip")
        expect(Number(gzipped.headers["content-length"]), path).toBe(gzipped.body.length)
        expect(gzipped.body.length, path).toBeLessThan(plain.body.length / 3)
        expect(Zlib.gunzipSync(gzipped.body).equals(plain.body), path).toBe(true)
      }
    }
  })

  it("reports liveness and readiness", async () => {
    expect(await (await node.fetch("/healthz")).json()).toEqual({ status: "ok" })
    const ready = await (await node.fetch("/readyz")).json()
    expect(ready.status).toBe("ready")
    expect(ready.shards_owned).toBe(ready.shards_total)
    expect(ready.shards_total).toBe(300)
  })

  it("formats timestamps as ISO 8601 UTC with microseconds", async () => {
    const me = await (await node.fetch("/v1/me", { apiKey })).json()
    expect(me.organization.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
  })
})

describe("readiness", () => {
  it("turns unready while a task on this node's shards stands still, and ready again once it moves", async () => {
    // the node's sweep would start the task below: with its next sweep an hour away, it stands still
    const stallNode = await startTestNode({
      SWITCHYARD_READY_STALL_AFTER: "1 second",
      SWITCHYARD_TASK_SWEEP_INTERVAL: "1 hour"
    })
    const pg = (await import("pg")).default
    const db = new pg.Client({ connectionString: stallNode.databaseUrl })
    await db.connect()
    try {
      const org = await stallNode.bootstrap()
      const agentId = crypto.randomUUID()
      const taskId = crypto.randomUUID()
      await db.query(
        `INSERT INTO agents (id, organization_id, name, model, max_steps) VALUES ($1, $2, 'a', '{"provider":"scripted"}', 1)`,
        [agentId, org.organization_id]
      )
      // a task nothing runs: what stalled task loops leave behind
      await db.query(
        `INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input, agent_snapshot, created_at)
         VALUES ($1, $2, $3, 'pending', 'api', 'u', 'u@example.com', 'hi', '{}', now() - interval '5 seconds')`,
        [taskId, org.organization_id, agentId]
      )
      const stalled = await stallNode.fetch("/readyz")
      expect(stalled.status).toBe(503)
      const body = await stalled.json()
      expect(body.error.message).toContain("stalled")
      expect(body.error.details.stalled_tasks).toBe(1)
      await db.query("UPDATE tasks SET status = 'completed' WHERE id = $1", [taskId])
      expect((await stallNode.fetch("/readyz")).status).toBe(200)
    } finally {
      await db.end()
      await stallNode.stop()
    }
  })
})
