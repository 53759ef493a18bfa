import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { json } from "../connectors/support.js"
import { type LogLine, startTestNode, type TestNode } from "../support/TestNode.js"
import { createAgent, user } from "./support.js"

/**
 * Every case runs against both ways a node answers `POST /v1/agents/{id}/invoke` and `GET /v1/tasks/{id}`:
 * the plain-Node fast path (for keys the general stack verified recently) and the general Effect stack
 * (SWITCHYARD_TASK_FAST_PATH false). Each answer is also kept, with the node-specific parts replaced, and
 * the two runs must match exactly: status, our headers and body.
 */
const answers = new Map<string, Map<string, unknown>>()
/** A run's requests: each case's request id, and the node's log lines (the fast path's access log says it answered). */
interface Served {
  readonly requestIds: Map<string, string>
  readonly logs: Array<LogLine>
}
const servedBy = new Map<string, Served>()
/** Cases the fast path leaves to the general stack; every other case it answers itself. */
const DECLINED = new Set(["asynchronous-maybe", "text-plain", "get-wait-99", "get-extra-query", "bad-key"])

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi

describe.each([["fast path", "true"], ["general stack", "false"]])("tasks through the %s", (label, fastPath) => {
  let node: TestNode
  let apiKey: string
  let agent: any
  const seen = new Map<string, unknown>()
  answers.set(label, seen)
  const served: Served = { requestIds: new Map(), logs: [] }
  servedBy.set(label, served)
  // ids of this run → stable names, so both runs' answers read the same
  const names = new Map<string, string>()
  const name = (id: string, as: string) => void names.set(id.toLowerCase(), `<${as}>`)
  // keys to keep verified: the fast path takes a key only while the general stack's check is recent
  const keys: Array<string> = []
  const warm = async (key: string) => {
    const response = await node.fetch("/v1/agents", { apiKey: key })
    expect(response.status).toBe(200)
  }

  beforeAll(async () => {
    node = await startTestNode({
      SWITCHYARD_TASK_FAST_PATH: fastPath,
      // long enough that a verified key stays in the cache for the whole run
      SWITCHYARD_API_KEY_CACHE_TTL: "10 minutes",
      // $0.001 per token: one call spends a tiny budget
      SWITCHYARD_MODEL_PRICES: JSON.stringify({ scripted: { input: 1000, output: 1000 } })
    }, { logs: served.logs })
    ;({ api_key: apiKey } = await node.bootstrap("Main"))
    keys.push(apiKey)
    agent = await scripted("done")
  })
  afterAll(async () => {
    await node?.stop()
  })
  beforeEach(async () => {
    for (const key of keys) await warm(key)
  })

  const scripted = async (text: string, extra: Record<string, unknown> = {}) => {
    const created = await createAgent(node, apiKey, {
      name: `says ${text}`,
      model: { provider: "scripted", script: [{ text }] },
      ...extra
    })
    name(created.id, `agent:${text}`)
    return created
  }

  /** Sends a request; keeps the answer (ids and times replaced) under `key` for the comparison of both runs. */
  const send = async (
    key: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string>; apiKey?: string } = {}
  ) => {
    const response = await node.fetch(path, {
      method: init.body === undefined ? "GET" : "POST",
      apiKey: init.apiKey ?? apiKey,
      headers: {
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
        "x-request-id": `req-${key}`,
        ...init.headers
      },
      ...(init.body === undefined
        ? {}
        : { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) })
    })
    const text = await response.text()
    const headers = Object.fromEntries(
      ["content-type", "x-switchyard-error", "x-request-id", "location"].map((h) => [h, response.headers.get(h)])
    )
    const json = text === "" ? undefined : JSON.parse(text)
    const answer = JSON.stringify({ status: response.status, headers, body: text })
    // task ids (and any other new id: generated request ids) get names in the order they first appear
    for (const id of answer.match(UUID) ?? []) {
      if (!names.has(id.toLowerCase())) name(id, `id:${names.size}`)
    }
    const replaced = answer.replace(UUID, (id) => names.get(id.toLowerCase())!).replace(
      /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g,
      "<timestamp>"
    )
    expect(seen.has(key)).toBe(false)
    seen.set(key, JSON.parse(replaced))
    served.requestIds.set(key, response.headers.get("x-request-id")!)
    return { status: response.status, headers, json }
  }

  const invoke = (key: string, agentId: string, body: unknown = { input: { text: "hi", user } }, init: {
    query?: string
    headers?: Record<string, string>
    apiKey?: string
  } = {}) => send(key, `/v1/agents/${agentId}/invoke${init.query ?? ""}`, { body, ...init })

  const expectError = (answer: Awaited<ReturnType<typeof send>>, status: number, code: string) => {
    expect({ status: answer.status, code: answer.json?.error?.code }).toEqual({ status, code })
    expect(answer.headers["x-switchyard-error"]).toBe("true")
    expect(answer.json.error.request_id).toBe(answer.headers["x-request-id"])
  }

  let syncTask: any
  let asyncTask: any

  it("invokes synchronously: 200 with the completed task, keeping the request id", async () => {
    const answer = await invoke("sync", agent.id)
    expect(answer.status).toBe(200)
    expect(answer.headers["content-type"]).toMatch(/^application\/json/)
    expect(answer.headers["x-request-id"]).toBe("req-sync")
    expect(answer.headers["x-switchyard-error"]).toBeNull()
    // only an accepted (202) task points elsewhere
    expect(answer.headers["location"]).toBeNull()
    expect(answer.json).toMatchObject({
      agent_id: agent.id,
      status: "completed",
      result: "done",
      source: "api",
      user: { id: user.id, email: user.email }
    })
    expect(answer.json.created_at).toMatch(TIMESTAMP)
    expect(answer.json.finished_at).toMatch(TIMESTAMP)
    syncTask = answer.json
  })

  it("invokes asynchronously: 202 pending with the task's Location, then a long poll there sees it completed", async () => {
    const accepted = await invoke("async", agent.id, undefined, { query: "?asynchronous=true" })
    expect(accepted.status).toBe(202)
    expect(accepted.json).toMatchObject({ agent_id: agent.id, status: "pending", result: null, finished_at: null })
    expect(accepted.headers["location"]).toBe(`/v1/tasks/${accepted.json.id}`)
    const done = await send("async-wait", `${accepted.headers["location"]}?wait=10`)
    expect(done.status).toBe(200)
    expect(done.json).toMatchObject({ id: accepted.json.id, status: "completed", result: "done" })
    asyncTask = done.json
    // the node that ran it answers from what it knows: the same task, read or waited for
    expect((await send("async-read", `/v1/tasks/${asyncTask.id}`)).json).toEqual(asyncTask)
    expect((await send("async-read-wait", `/v1/tasks/${asyncTask.id}?wait=5`)).json).toEqual(asyncTask)
    // asynchronous=false is the synchronous invoke
    const explicit = await invoke("sync-explicit", agent.id, undefined, { query: "?asynchronous=false" })
    expect(explicit.status).toBe(200)
    expect(explicit.json.status).toBe("completed")
  })

  it("reads a finished task as the invoke answered it", async () => {
    const read = await send("get-finished", `/v1/tasks/${syncTask.id}`)
    expect(read.status).toBe(200)
    expect(read.json).toEqual(syncTask)
    const waited = await send("get-finished-wait", `/v1/tasks/${syncTask.id}?wait=5`)
    expect(waited.json).toEqual(syncTask)
    const upper = await send("get-uppercase-id", `/v1/tasks/${syncTask.id.toUpperCase()}`)
    expect(upper.status).toBe(200)
  })

  it("answers unknown tasks and agents with 404 not_found", async () => {
    expectError(await send("unknown-task", `/v1/tasks/${crypto.randomUUID()}`), 404, "not_found")
    expectError(await send("unknown-task-wait", `/v1/tasks/${crypto.randomUUID()}?wait=2`), 404, "not_found")
    expectError(await invoke("unknown-agent", crypto.randomUUID()), 404, "not_found")
    // an unusable x-request-id is replaced by a generated one
    const generated = await send("generated-request-id", `/v1/tasks/${crypto.randomUUID()}`, {
      headers: { "x-request-id": "not usable" }
    })
    expectError(generated, 404, "not_found")
    expect(generated.headers["x-request-id"]).toMatch(UUID)
  })

  it("refuses invalid bodies with 400 validation_failed or invalid_json", async () => {
    const noEmail = await invoke("no-email", agent.id, { input: { text: "hi", user: { id: "u" } } })
    expectError(noEmail, 400, "validation_failed")
    expect(noEmail.json.error.message).toContain("email")
    expect(noEmail.json.error.details.issues.map((i: any) => i.path)).toContain("input.user.email")
    const emptyText = await invoke("empty-text", agent.id, { input: { text: "", user } })
    expectError(emptyText, 400, "validation_failed")
    expect(emptyText.json.error.details.issues.map((i: any) => i.path)).toContain("input.text")
    const noInput = await invoke("no-input", agent.id, {})
    expectError(noInput, 400, "validation_failed")
    expect(noInput.json.error.details.issues.map((i: any) => i.path)).toContain("input")
    expectError(await invoke("invalid-json", agent.id, "{\"input\":"), 400, "invalid_json")
    // a valid invocation, but with arrays nested 70 deep beside it
    const nested = Array.from({ length: 70 }).reduce<unknown>((inner) => [inner], [])
    const deep = JSON.stringify({ input: { text: "hi", user }, extra: nested })
    expectError(await invoke("too-deep", agent.id, deep), 400, "invalid_json")
  })

  it("keeps Idempotency-Key: the same task for the same body, 409 for another, 400 for a bad key", async () => {
    const key = { "idempotency-key": "fast-path-once" }
    const first = await invoke("idempotent-first", agent.id, { input: { text: "once", user } }, { headers: key })
    const again = await invoke("idempotent-again", agent.id, { input: { text: "once", user } }, { headers: key })
    expect([first.status, again.status]).toEqual([200, 200])
    expect(again.json.id).toBe(first.json.id)
    expectError(
      await invoke("idempotent-conflict", agent.id, { input: { text: "twice", user } }, { headers: key }),
      409,
      "idempotency_conflict"
    )
    expectError(
      await invoke("idempotency-key-space", agent.id, undefined, { headers: { "idempotency-key": "a b" } }),
      400,
      "invalid_idempotency_key"
    )
    expectError(
      await invoke("idempotency-key-long", agent.id, undefined, { headers: { "idempotency-key": "k".repeat(256) } }),
      400,
      "invalid_idempotency_key"
    )
  })

  it("refuses an agent whose budget is spent with 402 budget_exhausted", async () => {
    const budgeted = await scripted("costly", { budget: { limit_usd: 0.000001, period: "total" } })
    // the first invocation is admitted (nothing spent yet) and ends at the budget; the next one is refused
    const first = await invoke("budget-first", budgeted.id)
    expect(first.status).toBe(200)
    expect(["completed", "error"]).toContain(first.json.status)
    const refused = await invoke("budget-exhausted", budgeted.id)
    expectError(refused, 402, "budget_exhausted")
  })

  it("keeps a key limited to one agent away from the others and their tasks", async () => {
    const allowed = await scripted("allowed")
    const created = await node.fetch("/v1/api-keys", {
      ...json({ name: "limited", kind: "organization", agent_ids: [allowed.id] }),
      apiKey
    })
    expect(created.status).toBe(201)
    const limited = (await created.json()).api_key as string
    keys.push(limited)
    await warm(limited)
    expect((await invoke("limited-allowed", allowed.id, undefined, { apiKey: limited })).status).toBe(200)
    expectError(await invoke("limited-other-agent", agent.id, undefined, { apiKey: limited }), 404, "not_found")
    expectError(await send("limited-other-task", `/v1/tasks/${syncTask.id}`, { apiKey: limited }), 404, "not_found")
    for (const [key, query] of [["limited-async-task", ""], ["limited-async-task-wait", "?wait=2"]]) {
      expectError(await send(key!, `/v1/tasks/${asyncTask.id}${query}`, { apiKey: limited }), 404, "not_found")
    }
  })

  it("leaves what the fast path declines to the general stack", async () => {
    // anything but `true` is a synchronous invoke
    const maybe = await invoke("asynchronous-maybe", agent.id, undefined, { query: "?asynchronous=maybe" })
    expect(maybe.status).toBe(200)
    expect(maybe.json.status).toBe("completed")
    const plain = await invoke("text-plain", agent.id, undefined, { headers: { "content-type": "text/plain" } })
    expectError(plain, 415, "unsupported_media_type")
    expectError(await send("get-wait-99", `/v1/tasks/${syncTask.id}?wait=99`), 400, "validation_failed")
    const extra = await send("get-extra-query", `/v1/tasks/${syncTask.id}?wait=1&x=1`)
    expect(extra.status).toBe(200)
    const badKey = await send("bad-key", `/v1/tasks/${syncTask.id}`, { apiKey: "sy_nope_nope" })
    expect(badKey.status).toBe(401)
  })

  it("keeps other organizations out: their key can neither read the task nor invoke the agent", async () => {
    const other = (await node.bootstrap("Other")).api_key
    keys.push(other)
    await warm(other)
    expectError(await send("other-org-task", `/v1/tasks/${syncTask.id}`, { apiKey: other }), 404, "not_found")
    // nor one the node remembers running (an async task's)
    for (const [key, query] of [["other-org-async-task", ""], ["other-org-async-task-wait", "?wait=2"]]) {
      expectError(await send(key!, `/v1/tasks/${asyncTask.id}${query}`, { apiKey: other }), 404, "not_found")
    }
    expectError(await invoke("other-org-invoke", agent.id, undefined, { apiKey: other }), 404, "not_found")
  })
})

describe("both paths", () => {
  it("give the same answers, case by case", () => {
    const fast = answers.get("fast path")!
    const general = answers.get("general stack")!
    expect([...fast.keys()].sort()).toEqual([...general.keys()].sort())
    for (const [name, answer] of fast) expect({ name, answer }).toEqual({ name, answer: general.get(name) })
  })

  it("were each taken: the fast path answered all but the declined cases, the general stack everything", () => {
    const fastOf = ({ logs, requestIds }: Served) => {
      const fastIds = new Set(
        logs.filter((line) => line.annotations["fast_path"] === true).map((line) => line.annotations["request_id"])
      )
      return [...requestIds].filter(([, id]) => fastIds.has(id)).map(([name]) => name)
    }
    const fastRun = servedBy.get("fast path")!
    const expected = [...fastRun.requestIds.keys()].filter((name) => !DECLINED.has(name))
    expect(fastOf(fastRun).sort()).toEqual(expected.sort())
    expect(fastOf(servedBy.get("general stack")!)).toEqual([])
  })
})
