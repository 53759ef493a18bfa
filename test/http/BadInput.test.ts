import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, call, expectError, scriptedAgent } from "../access/support.js"
import { createAgent, user } from "../agents/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

/**
 * Regression tests for what an outside probe found (issue 19): input a client controls never hangs a
 * request and never reaches PostgreSQL unchecked (500); a Member cancels only their own tasks.
 * Each runs on both stacks where a fast path exists: `fast` answers from plain Node, `general` from HttpApi.
 */
const stacks: Record<string, TestNode> = {}
let adminKey: Record<string, string> = {}
let agentId: Record<string, string> = {}

beforeAll(async () => {
  stacks.fast = await startTestNode()
  stacks.general = await startTestNode({ SWITCHYARD_TASK_FAST_PATH: "false", SWITCHYARD_CONNECTOR_FAST_PATH: "false" })
  for (const [name, node] of Object.entries(stacks)) {
    adminKey = { ...adminKey, [name]: (await node.bootstrap()).api_key }
    agentId = { ...agentId, [name]: (await createAgent(node, adminKey[name]!, scriptedAgent())).id }
    // the fast paths answer keys this node has verified: make it so
    await call(node, adminKey[name]!, "GET", "/v1/me")
  }
})
afterAll(async () => {
  await Promise.all(Object.values(stacks).map((node) => node.stop()))
})

/** A raw request with these headers and body; it must be answered within 10 s. */
const send = async (
  node: TestNode,
  method: string,
  path: string,
  apiKey: string,
  body?: string,
  contentType?: string
) => {
  const headers: Record<string, string> = { "x-api-key": apiKey }
  if (contentType !== undefined) headers["content-type"] = contentType
  // fetch would add text/plain to a string body without a type: a Blob without one sends none
  const payload = body === undefined ? undefined : contentType === undefined ? new Blob([body]) : body
  const response = await fetch(node.baseUrl + path, {
    method,
    headers,
    ...(payload === undefined ? {} : { body: payload }),
    signal: AbortSignal.timeout(10_000)
  })
  const text = await response.text()
  return {
    status: response.status,
    headers: response.headers,
    body: /json/.test(response.headers.get("content-type") ?? "") && text !== "" ? JSON.parse(text) : text
  }
}

describe.each(["fast", "general"])("JSON content types (%s stack)", (stack) => {
  const node = () => stacks[stack]!
  const key = () => adminKey[stack]!

  it("answers application/*+json bodies instead of hanging", async () => {
    const group = await send(
      node(),
      "POST",
      "/v1/groups",
      key(),
      `{"name":"x-${stack}"}`,
      "application/merge-patch+json"
    )
    expect(group.status).toBe(201)
    const patched = await send(
      node(),
      "PATCH",
      `/v1/agents/${agentId[stack]}`,
      key(),
      `{"name":"renamed"}`,
      "application/vnd.api+json; charset=utf-8"
    )
    expect(patched.status).toBe(200)
    expect(patched.body.name).toBe("renamed")
    const invoked = await send(
      node(),
      "POST",
      `/v1/agents/${agentId[stack]}/invoke`,
      key(),
      JSON.stringify({ input: { text: "hi", user } }),
      "application/vnd.switchyard+json"
    )
    expect(invoked.status).toBe(200)
  })

  it("refuses a body without a content type, or of another type, with 415", async () => {
    const body = JSON.stringify({ input: { text: "hi", user } })
    for (
      const type of [undefined, "text/plain", "text/json", "application/jsonx", "application/x-www-form-urlencoded"]
    ) {
      expectError(
        await send(node(), "POST", `/v1/agents/${agentId[stack]}/invoke`, key(), body, type),
        415,
        "unsupported_media_type"
      )
      expectError(await send(node(), "POST", "/v1/groups", key(), `{"name":"y"}`, type), 415, "unsupported_media_type")
    }
  })

  it("accepts a POST with no body and no content type", async () => {
    const accepted = await send(
      node(),
      "POST",
      `/v1/agents/${agentId[stack]}/invoke?asynchronous=true`,
      key(),
      JSON.stringify({ input: { text: "hi", user } }),
      "application/json"
    )
    expect(accepted.status).toBe(202)
    const cancelled = await send(node(), "POST", `/v1/tasks/${accepted.body.id}/cancel`, key())
    // the quick task may have ended already (409 task_ended): either way the empty POST was taken
    expect(cancelled.status === 200 ? cancelled.body.status : cancelled.body.error.code)
      .toBe(cancelled.status === 200 ? "cancelled" : "task_ended")
  })
})

describe.each(["fast", "general"])("ids, dates and text checked at the contract (%s stack)", (stack) => {
  const node = () => stacks[stack]!
  const key = () => adminKey[stack]!

  it("answers a malformed agent id with 400 on every agent route", async () => {
    for (const id of ["-1", "agt_x", "x".repeat(128), "00000000-0000-0000-0000-00000000000g"]) {
      expectError(await send(node(), "GET", `/v1/agents/${id}`, key()), 400, "validation_failed")
      expectError(
        await send(node(), "PATCH", `/v1/agents/${id}`, key(), `{"name":"n"}`, "application/json"),
        400,
        "validation_failed"
      )
      expectError(await send(node(), "DELETE", `/v1/agents/${id}`, key()), 400, "validation_failed")
      const body = JSON.stringify({ input: { text: "hi", user } })
      expectError(
        await send(node(), "POST", `/v1/agents/${id}/invoke`, key(), body, "application/json"),
        400,
        "validation_failed"
      )
      expectError(await send(node(), "GET", `/v1/tasks?agent_id=${id}`, key()), 400, "validation_failed")
    }
  })

  it("answers malformed skill and approval ids and filters with 400", async () => {
    for (
      const path of [
        "/v1/skills/nope",
        "/v1/approvals/nope",
        "/v1/approvals?task_id=nope",
        "/v1/skills/violations?agent_id=-1"
      ]
    ) {
      expectError(await send(node(), "GET", path, key()), 400, "validation_failed")
    }
  })

  it("answers a date that is not one with 400", async () => {
    for (const date of ["not-a-date", "9999-99-99", "-271821-04-20", "20000-01-01"]) {
      const q = encodeURIComponent(date)
      expectError(await send(node(), "GET", `/v1/tasks?created_before=${q}`, key()), 400, "validation_failed")
      expectError(await send(node(), "GET", `/v1/tasks?created_after=${q}`, key()), 400, "validation_failed")
      expectError(await send(node(), "GET", `/v1/audit-logs?from=${q}`, key()), 400, "validation_failed")
    }
    expect((await send(node(), "GET", "/v1/tasks?created_before=2030-01-01", key())).status).toBe(200)
  })

  it("refuses the NUL character in bodies and URLs with 400 invalid_text", async () => {
    const nul = "a\u0000b"
    const cases: Array<[string, string, unknown]> = [
      ["POST", "/v1/groups", { name: nul }],
      ["POST", "/v1/agents", { ...scriptedAgent(), name: nul }],
      ["PATCH", `/v1/agents/${agentId[stack]}`, { instructions: nul }],
      ["POST", `/v1/agents/${agentId[stack]}/invoke`, { input: { text: nul, user } }],
      ["POST", "/v1/members", { email: "nul@example.com", role: "member", name: nul }],
      ["POST", "/v1/skills", { name: nul }]
    ]
    for (const [method, path, body] of cases) {
      const sent = await send(node(), method, path, key(), JSON.stringify(body), "application/json")
      expectError(sent, 400, "invalid_text")
    }
    // an escaped backslash before `u0000` is text, not NUL
    const literal = await send(
      node(),
      "POST",
      "/v1/groups",
      key(),
      JSON.stringify({ name: `back\\u0000slash ${stack}` }),
      "application/json"
    )
    expect(literal.status).toBe(201)
    expectError(await send(node(), "GET", "/v1/tasks?user_id=a%00b", key()), 400, "invalid_text")
    expectError(await send(node(), "GET", "/v1/agents/%00", key()), 400, "invalid_text")
  })

  it("answers a path segment longer than the router matches with 400, not 405", async () => {
    const long = "a".repeat(2000)
    expectError(await send(node(), "GET", `/v1/agents/${long}`, key()), 400, "validation_failed")
    expectError(await send(node(), "GET", `/v1/tasks/${long}`, key()), 400, "validation_failed")
    expectError(await send(node(), "GET", `/v1/agents/${"a".repeat(200)}`, key()), 400, "validation_failed")
  })

  it("says a malformed percent-escape is one, not a long segment", async () => {
    for (const path of ["/v1/agents/%zz", "/v1/tasks/%E0%A4%A"]) {
      const answer = await send(node(), "GET", path, key())
      expectError(answer, 400, "validation_failed")
      expect(answer.body.error.message).toContain("percent-escape")
    }
  })
})

describe.each(["fast", "general"])("validation messages (%s stack)", (stack) => {
  const node = () => stacks[stack]!
  const key = () => adminKey[stack]!

  it("says a missing or non-object body is one, without the schema's name", async () => {
    const missing = await send(node(), "POST", "/v1/agents", key())
    expectError(missing, 400, "validation_failed")
    expect(missing.body.error.message).toBe("The request has no body (or a null one): send a JSON object.")
    const text = await send(node(), "POST", "/v1/agents", key(), `"hello"`, "application/json")
    expectError(text, 400, "validation_failed")
    expect(text.body.error.message).toBe(`The request body must be a JSON object, not "hello".`)
    const invoke = await send(node(), "POST", `/v1/agents/${agentId[stack]}/invoke`, key(), "[]", "application/json")
    expectError(invoke, 400, "validation_failed")
    expect(invoke.body.error.message).not.toMatch(/InvokeAgent|Expected [A-Z]/)
  })

  it("answers a URL past Node's header limit in the one error shape, not an empty 431", async () => {
    const answer = await send(node(), "GET", `/v1/agents?q=${"a".repeat(100_000)}`, key())
    expect(answer.status).toBe(431)
    expect(answer.body.error).toMatchObject({ code: "headers_too_large" })
    expect(answer.body.error.request_id).toBe(answer.headers.get("x-request-id"))
    expect(answer.headers.get("x-switchyard-error")).toBe("true")
  })

  it("refuses a field the contract does not name, as its additionalProperties: false says", async () => {
    const agent = await send(
      node(),
      "POST",
      "/v1/agents",
      key(),
      JSON.stringify({ ...scriptedAgent(), bogus: 1 }),
      "application/json"
    )
    expectError(agent, 400, "validation_failed")
    expect(agent.body.error.details.issues).toEqual([{
      path: "bogus",
      message: expect.stringContaining("is unexpected")
    }])
    // a key that would look as if it expired: refused, not created without an expiry
    const apiKey = await send(
      node(),
      "POST",
      "/v1/api-keys",
      key(),
      JSON.stringify({ name: "x", kind: "organization", expires_at: "2030-01-01T00:00:00Z" }),
      "application/json"
    )
    expectError(apiKey, 400, "validation_failed")
    expect(apiKey.body.error.details.issues.map((i: any) => i.path)).toEqual(["expires_at"])
    const invoke = await send(
      node(),
      "POST",
      `/v1/agents/${agentId[stack]}/invoke`,
      key(),
      JSON.stringify({ input: { text: "hi", user, extra: true } }),
      "application/json"
    )
    expectError(invoke, 400, "validation_failed")
    expect(invoke.body.error.details.issues.map((i: any) => i.path)).toEqual(["input.extra"])
  })

  it("says what a date or a delivery id must be, in words, not as a schema's description", async () => {
    const date = await send(node(), "GET", "/v1/tasks?created_after=not-a-date", key())
    expectError(date, 400, "validation_failed")
    expect(date.body.error.message).toContain("must be an ISO 8601 date")
    expect(date.body.error.message).not.toContain("Invalid Date")
    const delivery = await send(
      node(),
      "POST",
      `/v1/webhooks/${crypto.randomUUID()}/deliveries/bogus/retry`,
      key()
    )
    expectError(delivery, 400, "validation_failed")
    expect(delivery.body.error.message).toContain("must be the id of a delivery")
  })

  it("quotes a refused value as a glimpse, not whole", async () => {
    const big = { big: "x".repeat(100_000) }
    for (
      const [path, body] of [
        [`/v1/agents/${agentId[stack]}/invoke`, { input: { text: big, user } }],
        ["/v1/agents", { ...scriptedAgent(), name: big.big }]
      ] as const
    ) {
      const answer = await send(node(), "POST", path, key(), JSON.stringify(body), "application/json")
      expectError(answer, 400, "validation_failed")
      expect(answer.body.error.message.length).toBeLessThan(400)
      expect(answer.body.error.message).toMatch(/, actual .*xxx… \(\d+ characters\)$/)
      expect(JSON.stringify(answer.body).length).toBeLessThan(2000)
    }
  })

  it("lists the real issue of an optional field, not that it could be left out", async () => {
    const answer = await send(node(), "GET", "/v1/tasks?limit=0", key())
    expectError(answer, 400, "validation_failed")
    expect(answer.body.error.message).not.toContain("Expected undefined")
    expect(answer.body.error.details.issues.map((i: any) => i.path)).toEqual(["limit"])
  })
})

describe("task cancel rights", () => {
  it("lets a Member cancel only the tasks they invoked; a Builder cancels anyone's", async () => {
    const node = stacks.general!
    const admin = adminKey.general!
    const slow = await createAgent(node, admin, {
      name: "slow",
      model: { provider: "scripted", script: [{ text: "late", delay_ms: 20_000 }] }
    })
    const member = await addMember(node, admin, "member")
    const other = await addMember(node, admin, "member")
    const builder = await addMember(node, admin, "builder")
    const invoke = async (apiKey: string) =>
      (await call(node, apiKey, "POST", `/v1/agents/${slow.id}/invoke?asynchronous=true`, {
        input: { text: "?", user }
      })).body.id as string

    const adminsTask = await invoke(admin)
    expectError(await call(node, member.key, "POST", `/v1/tasks/${adminsTask}/cancel`), 403, "forbidden")
    expect((await call(node, admin, "GET", `/v1/tasks/${adminsTask}`)).body.status).not.toBe("cancelled")

    const membersTask = await invoke(member.key)
    expectError(await call(node, other.key, "POST", `/v1/tasks/${membersTask}/cancel`), 403, "forbidden")
    const own = await call(node, member.key, "POST", `/v1/tasks/${membersTask}/cancel`)
    expect({ status: own.status, task: own.body.status }).toEqual({ status: 200, task: "cancelled" })

    const byBuilder = await call(node, builder.key, "POST", `/v1/tasks/${adminsTask}/cancel`)
    expect({ status: byBuilder.status, task: byBuilder.body.status }).toEqual({ status: 200, task: "cancelled" })
  })
})
