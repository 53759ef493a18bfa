import { Agent } from "undici"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { providerFor } from "../../../src/agents/models/index.js"
import { retryAfterMs } from "../../../src/agents/models/ModelHttp.js"
import { ModelError } from "../../../src/agents/models/ModelProvider.js"
import { defaultPolicy } from "../../../src/connectors/egress/EgressPolicy.js"
import { makeGuardedDispatcher } from "../../../src/connectors/egress/GuardedDispatcher.js"
import { type ModelServer, startModelServer } from "../../support/ModelServers.js"
import { freePort } from "../../support/ports.js"
import { baseRequest, callRecording, connectionTo, rejectionOf } from "./harness.js"

describe.each(["openai", "openai-chat", "anthropic"] as const)("%s errors", (kind) => {
  const provider = providerFor(kind)
  const dispatcher = new Agent()
  let server: ModelServer
  beforeAll(async () => {
    server = await startModelServer(kind)
  })
  afterAll(async () => {
    await server.close()
    await dispatcher.close()
  })
  beforeEach(() => {
    server.script.length = 0
    server.requests.length = 0
  })
  const call = (baseUrl = server.url, signal?: AbortSignal) =>
    rejectionOf(callRecording(provider, connectionTo(baseUrl, dispatcher), baseRequest, signal ? { signal } : {}))

  it("401 is not retryable and carries the server's message", async () => {
    server.script.push({ status: 401, error: "Invalid API key provided" })
    const error = await call()
    expect(error).toBeInstanceOf(ModelError)
    expect(error).toMatchObject({
      code: "model_http_error",
      status: 401,
      retryable: false,
      message: "Invalid API key provided"
    })
  })

  it.each([429, 500, 529])("%i is retryable", async (status) => {
    server.script.push({ status, error: "slow down" })
    expect(await call()).toMatchObject({ code: "model_http_error", status, retryable: true, message: "slow down" })
  })

  it("a 429 carries the wait its Retry-After asks for, in seconds or as OpenAI's retry-after-ms", async () => {
    server.script.push(
      { status: 429, error: "slow down", headers: { "retry-after": "7" } },
      { status: 503, error: "busy", headers: { "retry-after-ms": "1500", "retry-after": "2" } },
      { status: 429, error: "slow down", headers: { "retry-after": "soon" } }
    )
    expect(await call()).toMatchObject({
      retryAfterMs: 7000,
      message: "slow down (the server asks to retry after 7 s)"
    })
    expect(await call()).toMatchObject({ status: 503, retryable: true, retryAfterMs: 1500 })
    expect(await call()).toMatchObject({ retryAfterMs: undefined, message: "slow down" })
  })

  it("waits for a slow answer as long as the caller does: no timeout of the HTTP client's own cuts it off", async () => {
    // a client whose timeouts are short stands for undici's 300 s defaults (a reasoning model answers later)
    const impatient = new Agent({ headersTimeout: 300, bodyTimeout: 300 })
    try {
      server.script.push({ text: "Thought it over.", delay_ms: 1500 })
      const { response } = await callRecording(provider, connectionTo(server.url, impatient), baseRequest)
      expect(response.text).toBe("Thought it over.")
    } finally {
      await impatient.close()
    }
  })

  it("a malformed body is model_bad_response", async () => {
    server.script.push({ raw: "{\"choices\": [ oops" })
    expect(await call()).toMatchObject({ code: "model_bad_response", retryable: false })
  })

  it("a JSON body of the wrong shape is model_bad_response", async () => {
    server.script.push({ raw: "{\"hello\":\"world\"}" })
    expect(await call()).toMatchObject({ code: "model_bad_response" })
  })

  it.each([1e308, -3, 12.5, 2 ** 31])("a token count of %d is model_bad_usage, naming the field", async (count) => {
    server.script.push({ text: "hi", usage: { input: count, output: 1 } })
    const error = await call()
    expect(error).toMatchObject({ code: "model_bad_usage", retryable: false })
    expect(error.message).toContain(`_tokens = ${JSON.stringify(count)}`)
  })

  it("aborting while the server hangs rejects promptly", async () => {
    server.script.push({ hang: true })
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 100)
    const started = Date.now()
    const error = await call(server.url, controller.signal)
    expect(Date.now() - started).toBeLessThan(1000)
    expect(error.name).toBe("AbortError")
  })

  it("an already aborted signal sends nothing", async () => {
    const controller = new AbortController()
    controller.abort()
    expect((await call(server.url, controller.signal)).name).toBe("AbortError")
    expect(server.requests).toEqual([])
  })

  it("a closed port is model_unreachable (retryable)", async () => {
    const port = await freePort()
    const error = await call(`http://127.0.0.1:${port}/v1`)
    expect(error).toMatchObject({ code: "model_unreachable", retryable: true, status: undefined })
    expect(error.message).toContain(`127.0.0.1:${port}`)
  })

  it("a destination the egress guard refuses is model_egress_refused, not retryable", async () => {
    const guarded = makeGuardedDispatcher(defaultPolicy)
    try {
      const error = await rejectionOf(callRecording(provider, connectionTo(server.url, guarded), baseRequest))
      expect(error).toMatchObject({ code: "model_egress_refused", retryable: false })
      expect(server.requests).toEqual([])
    } finally {
      await guarded.close()
    }
  })

  it("a base URL that is not http(s) is model_not_configured", async () => {
    expect(await call("ftp://models.example")).toMatchObject({ code: "model_not_configured", retryable: false })
    expect(await call("not a url")).toMatchObject({ code: "model_not_configured" })
  })
})

describe("retryAfterMs", () => {
  it("reads an HTTP date as the time left until it", () => {
    const now = Date.parse("2026-11-27T12:00:00Z")
    expect(retryAfterMs({ "retry-after": "Fri, 27 Nov 2026 12:00:30 GMT" }, now)).toBe(30_000)
    expect(retryAfterMs({ "retry-after": "Fri, 27 Nov 2026 11:00:00 GMT" }, now)).toBe(0)
    expect(retryAfterMs({}, now)).toBeUndefined()
  })
})

describe("providerFor", () => {
  it("refuses a provider name that is not one of ours", () => {
    expect(() => providerFor("gemini" as never)).toThrow(ModelError)
  })
})
