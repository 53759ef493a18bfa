import * as Http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { withDatabase } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { patterned, sha256, uploaded } from "./support.js"

const LIMIT = 2 * 1024 * 1024

let node: TestNode
let admin: string
beforeAll(async () => {
  // the JSON body limit is far below the file limit: it must not apply to uploads
  node = await startTestNode({ SWITCHYARD_MAX_FILE_BYTES: String(LIMIT), SWITCHYARD_MAX_BODY_BYTES: "65536" })
  admin = (await node.bootstrap()).api_key
})
afterAll(() => node?.stop())

interface Sent {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: any
  /** Bytes of the body written before the answer came. */
  readonly sent: number
}

/**
 * Sends a body of up to `total` bytes in 256 KiB pieces, and stops the moment the answer arrives: how much
 * was sent by then tells whether the node answered before reading the rest.
 */
const sendUntilAnswered = (path: string, total: number, headers: Record<string, string>) =>
  new Promise<Sent>((resolve, reject) => {
    const url = new URL(node.baseUrl + path)
    const request = Http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      method: "POST",
      headers: { "x-api-key": admin, "content-type": "application/octet-stream", ...headers }
    })
    let sent = 0
    let answered = false
    const piece = patterned(256 * 1024)
    request.on("response", (response) => {
      answered = true
      const chunks: Array<Buffer> = []
      response.on("data", (c: Buffer) => chunks.push(c))
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        resolve({
          status: response.statusCode!,
          headers: response.headers,
          body: text === "" ? undefined : JSON.parse(text),
          sent
        })
        request.destroy()
      })
    })
    // the node closing the connection after answering is expected
    request.on("error", (e) => answered ? undefined : reject(e))
    const pump = () => {
      while (!answered && sent < total) {
        sent += piece.length
        if (!request.write(piece)) return void request.once("drain", pump)
      }
      if (!answered && sent >= total) request.end()
    }
    pump()
  })

const storedFiles = () =>
  withDatabase(node, async (db) => (await db.query("SELECT count(*)::int AS n FROM files")).rows[0].n as number)

describe("SWITCHYARD_MAX_FILE_BYTES", () => {
  it("a file of exactly the limit is stored, although it is larger than SWITCHYARD_MAX_BODY_BYTES", async () => {
    const bytes = patterned(LIMIT)
    const file = await uploaded(node, admin, "exactly-the-limit.bin", bytes)
    expect(file).toMatchObject({ size: LIMIT, sha256: sha256(bytes) })
  })

  it("a declared Content-Length past the limit is 413 file_too_large at once, before the body is sent", async () => {
    const before = await storedFiles()
    const answer = await sendUntilAnswered("/v1/files?name=declared.bin", 64 * 1024 * 1024, {
      "content-length": String(64 * 1024 * 1024)
    })
    expect(answer.status).toBe(413)
    expect(answer.body.error.code).toBe("file_too_large")
    expect(answer.body.error.message).toContain("SWITCHYARD_MAX_FILE_BYTES")
    expect(answer.headers["x-switchyard-error"]).toBe("true")
    // answered long before the 64 MiB were sent
    expect(answer.sent).toBeLessThan(16 * 1024 * 1024)
    expect(await storedFiles()).toBe(before)
  })

  it("a chunked body that grows past the limit is refused while it streams, and nothing of it is kept", async () => {
    const before = await storedFiles()
    const answer = await sendUntilAnswered("/v1/files?name=streamed.bin", 256 * 1024 * 1024, {
      "transfer-encoding": "chunked"
    })
    expect(answer.status).toBe(413)
    expect(answer.body.error.code).toBe("file_too_large")
    // the node stopped reading just past the limit, not at the end of the 256 MiB
    expect(answer.sent).toBeLessThan(32 * 1024 * 1024)
    expect(await storedFiles()).toBe(before)
    const chunks = await withDatabase(
      node,
      async (db) =>
        (await db.query(
          "SELECT count(*)::int AS n FROM file_chunks c WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.id = c.file_id AND f.status = 'ready')"
        )).rows[0].n
    )
    expect(chunks).toBe(0)
  })

  it("a client that goes on sending after the refusal is cut off within seconds: the node does not read it all", async () => {
    const url = new URL(node.baseUrl + "/v1/files?name=endless.bin")
    const outcome = await new Promise<{ status: number | undefined; afterAnswer: number; closedAfterMs: number }>(
      (resolve) => {
        const request = Http.request({
          host: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          method: "POST",
          headers: { "x-api-key": admin, "content-type": "application/octet-stream", "transfer-encoding": "chunked" }
        })
        const piece = patterned(64 * 1024)
        let status: number | undefined
        let answeredAt = 0
        let afterAnswer = 0
        let done = false
        request.on("response", (response) => {
          status = response.statusCode
          answeredAt = Date.now()
          response.resume()
        })
        const finish = () => {
          if (done) return
          done = true
          resolve({ status, afterAnswer, closedAfterMs: Date.now() - answeredAt })
        }
        request.on("error", finish)
        request.on("close", finish)
        const pump = () => {
          if (done) return
          // past 20 s of sending after the answer the node has read it all: the assertion below fails
          if (answeredAt > 0 && Date.now() - answeredAt > 20_000) return void request.destroy()
          if (answeredAt > 0) afterAnswer += piece.length
          if (request.write(piece)) setImmediate(pump)
          else request.once("drain", pump)
        }
        pump()
      }
    )
    expect(outcome.status).toBe(413)
    expect(outcome.closedAfterMs).toBeLessThan(10_000)
    expect((await node.fetch("/healthz")).status).toBe(200)
  })

  it("a multipart file past the limit is refused the same way", async () => {
    const boundary = "limit-boundary"
    const head = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.bin"\r\n` +
      "content-type: application/octet-stream\r\n\r\n"
    const answer = await new Promise<Sent>((resolve, reject) => {
      const url = new URL(node.baseUrl + "/v1/files")
      const request = Http.request({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { "x-api-key": admin, "content-type": `multipart/form-data; boundary=${boundary}` }
      })
      let sent = 0
      let answered = false
      const piece = patterned(256 * 1024)
      request.on("response", (response) => {
        answered = true
        const chunks: Array<Buffer> = []
        response.on("data", (c: Buffer) => chunks.push(c))
        response.on("end", () => {
          resolve({
            status: response.statusCode!,
            headers: response.headers,
            body: JSON.parse(Buffer.concat(chunks).toString()),
            sent
          })
          request.destroy()
        })
      })
      request.on("error", (e) => answered ? undefined : reject(e))
      request.write(head)
      const pump = () => {
        while (!answered && sent < 128 * 1024 * 1024) {
          sent += piece.length
          if (!request.write(piece)) return void request.once("drain", pump)
        }
        if (!answered) request.end(`\r\n--${boundary}--\r\n`)
      }
      pump()
    })
    expect(answer.status).toBe(413)
    expect(answer.body.error.code).toBe("file_too_large")
    expect(answer.sent).toBeLessThan(32 * 1024 * 1024)
  })

  it("the JSON body limit still holds everywhere else on /v1", async () => {
    const response = await node.fetch("/v1/agents", {
      method: "POST",
      apiKey: admin,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "x".repeat(100_000) })
    })
    expect(response.status).toBe(413)
    expect((await response.json()).error.code).toBe("payload_too_large")
    // and so does the JSON content-type rule: only the upload takes other types
    const form = await node.fetch("/v1/agents", {
      method: "POST",
      apiKey: admin,
      headers: { "content-type": "application/octet-stream" },
      body: "x"
    })
    expect(form.status).toBe(415)
  })
})
