import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, auditEvents, call, expectError, orgKey, pageThrough, withDatabase } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createFunction, invokeFunction, runCode, uniqueName } from "./support.js"

let node: TestNode
let admin: string
let organizationId: string
beforeAll(async () => {
  node = await startTestNode()
  const org = await node.bootstrap()
  admin = org.api_key
  organizationId = org.organization_id
})
afterAll(() => node?.stop())

const ECHO = "export default async (input, ctx) => { ctx.log('got', input); return { echoed: input } }"

describe("custom functions REST API", () => {
  it("creates a function with its defaults, invokes it and answers output, logs and duration", async () => {
    const fn = await createFunction(node, admin, ECHO, { description: "Echoes" })
    expect(fn).toMatchObject({
      version: 1,
      current_version: 1,
      timeout_ms: 5000,
      memory_mb: 32,
      input_schema: { type: "object" },
      description: "Echoes"
    })
    const r = await invokeFunction(node, admin, fn.id, { a: 1, b: ["x"] })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body).toMatchObject({
      output: { echoed: { a: 1, b: ["x"] } },
      logs: ["got {\"a\":1,\"b\":[\"x\"]}"],
      logs_truncated: false,
      version: 1
    })
    expect(typeof r.body.duration_ms).toBe("number")
  })

  it("every update is a new version; GET shows the current one, ?version= an old one, invoke runs either", async () => {
    const fn = await createFunction(node, admin, "export default async () => 'one'")
    const updated = await call(node, admin, "PATCH", `/v1/functions/${fn.id}`, {
      code: "export default async () => 'two'"
    })
    expect(updated.status, JSON.stringify(updated.body)).toBe(200)
    expect(updated.body).toMatchObject({ version: 2, current_version: 2, code: "export default async () => 'two'" })
    const renamed = await call(node, admin, "PATCH", `/v1/functions/${fn.id}`, { timeout_ms: 1000 })
    expect(renamed.body).toMatchObject({ version: 3, timeout_ms: 1000, code: "export default async () => 'two'" })
    expect((await call(node, admin, "GET", `/v1/functions/${fn.id}`)).body.version).toBe(3)
    // a change that changes nothing makes no version
    for (const nothing of [{}, { timeout_ms: 1000 }, { code: "export default async () => 'two'" }]) {
      const same = await call(node, admin, "PATCH", `/v1/functions/${fn.id}`, nothing)
      expect(same.status, JSON.stringify(same.body)).toBe(200)
      expect(same.body).toMatchObject({ version: 3, current_version: 3 })
    }
    const old = await call(node, admin, "GET", `/v1/functions/${fn.id}?version=1`)
    expect(old.body).toMatchObject({ version: 1, current_version: 3, code: "export default async () => 'one'" })
    const versions = await call(node, admin, "GET", `/v1/functions/${fn.id}/versions`)
    expect(versions.body.items.map((v: any) => v.version)).toEqual([3, 2, 1])
    expect((await invokeFunction(node, admin, fn.id)).body.output).toBe("two")
    expect((await invokeFunction(node, admin, fn.id, undefined, "?version=1")).body.output).toBe("one")
    expectError(await invokeFunction(node, admin, fn.id, undefined, "?version=9"), 404, "not_found")
    expectError(await call(node, admin, "GET", `/v1/functions/${fn.id}?version=9`), 404, "not_found")
  })

  it("input is validated against input_schema before anything runs: 400 validation_failed naming the field", async () => {
    const fn = await createFunction(node, admin, "export default async (i, ctx) => { ctx.log('ran'); return i }", {
      input_schema: {
        type: "object",
        required: ["city"],
        properties: { city: { type: "string", minLength: 2 }, days: { type: "integer", maximum: 14 } },
        additionalProperties: false
      }
    })
    const missing = await invokeFunction(node, admin, fn.id, { days: 3 })
    expectError(missing, 400, "validation_failed")
    expect(missing.body.error.details.issues).toContainEqual({ path: "input.city", message: "is required" })
    const wrong = await invokeFunction(node, admin, fn.id, { city: "Oslo", days: 99, extra: true })
    expectError(wrong, 400, "validation_failed")
    expect(wrong.body.error.details.issues.map((i: any) => i.path).sort()).toEqual(["input.days", "input.extra"])
    const ok = await invokeFunction(node, admin, fn.id, { city: "Oslo", days: 3 })
    expect(ok.body).toMatchObject({ output: { city: "Oslo", days: 3 }, logs: ["ran"] })
  })

  it("an input_schema that is not a JSON Schema is refused at create and update (400 invalid_input_schema)", async () => {
    const bad = await call(node, admin, "POST", "/v1/functions", {
      name: uniqueName(),
      code: ECHO,
      input_schema: { type: "no-such-type" }
    })
    expectError(bad, 400, "invalid_input_schema")
    const fn = await createFunction(node, admin, ECHO)
    expectError(
      await call(node, admin, "PATCH", `/v1/functions/${fn.id}`, { input_schema: { $ref: "https://example.com/x" } }),
      400,
      "invalid_input_schema"
    )
  })

  it("code that does not load as a function is refused at create and update (400 invalid_code), nothing stored", async () => {
    for (
      const [code, says] of [
        ["export default async (input) => { return input ", "SyntaxError"],
        ["throw new Error('at the top')\nexport default async () => 1", "at the top"],
        ["export const f = async () => 1", "default export is not a function"],
        ["export default async () => 1\nfor (;;) {}", "timeout_ms"]
      ] as const
    ) {
      const name = uniqueName()
      const refused = await call(node, admin, "POST", "/v1/functions", { name, code, timeout_ms: 300 })
      expectError(refused, 400, "invalid_code")
      expect(refused.body.error.message).toContain(says)
      const listed = (await call(node, admin, "GET", "/v1/functions")).body.items.map((f: any) => f.name)
      expect(listed).not.toContain(name)
    }
    const fn = await createFunction(node, admin, ECHO)
    const bad = await call(node, admin, "PATCH", `/v1/functions/${fn.id}`, { code: "export default (" })
    expectError(bad, 400, "invalid_code")
    expect((await call(node, admin, "GET", `/v1/functions/${fn.id}`)).body).toMatchObject({ version: 1, code: ECHO })
  })

  it("limits: timeout_ms out of 1-30000, memory_mb out of 16-64 and a bad name are 400 validation_failed", async () => {
    for (
      const [extra, says] of [
        [{ timeout_ms: 30_001 }, "`timeout_ms`: must be an integer from 1 to 30000"],
        [{ timeout_ms: 0 }, "`timeout_ms`: must be an integer from 1 to 30000"],
        [{ timeout_ms: 1.5 }, "`timeout_ms`: must be an integer from 1 to 30000"],
        [{ memory_mb: 65 }, "`memory_mb`: must be an integer from 16 to 64"],
        [{ memory_mb: 1 }, "`memory_mb`: must be an integer from 16 to 64"],
        [{ name: "has space" }, "`name`: must be 1-64 letters"]
      ] as const
    ) {
      const refused = await call(node, admin, "POST", "/v1/functions", { name: uniqueName(), code: ECHO, ...extra })
      expectError(refused, 400, "validation_failed")
      expect(refused.body.error.message).toContain(says)
    }
  })

  it("code is at most 256 KiB of UTF-8, counted in bytes; a refusal names the limit and does not echo the code", async () => {
    const module = (comment: string) => `// ${comment}\nexport default async () => 1`
    const fits = module("x".repeat(256 * 1024 - 40))
    expect(Buffer.byteLength(fits)).toBeLessThanOrEqual(256 * 1024)
    expect((await call(node, admin, "POST", "/v1/functions", { name: uniqueName(), code: fits })).status).toBe(201)
    // 200,000 characters, 400,000 bytes
    const wide = module("é".repeat(200_000))
    for (
      const refused of [
        await call(node, admin, "POST", "/v1/functions", { name: uniqueName(), code: wide }),
        await call(node, admin, "PATCH", `/v1/functions/${(await createFunction(node, admin, ECHO)).id}`, {
          code: wide
        })
      ]
    ) {
      expectError(refused, 400, "validation_failed")
      expect(refused.body.error.message).toContain("`code`")
      expect(refused.body.error.message).toContain("262144 bytes")
      expect(JSON.stringify(refused.body).length).toBeLessThan(2_000)
    }
  })

  it("invoking without `input` runs the function with {}, as documented", async () => {
    const fn = await createFunction(node, admin, "export default async (input) => ({ got: input })")
    const r = await call(node, admin, "POST", `/v1/functions/${fn.id}/invoke`, {})
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body.output).toEqual({ got: {} })
  })

  it("a bad ctx.files argument is refused with a message naming the call and the argument", async () => {
    const r = await runCode(
      node,
      admin,
      `export default async (input, ctx) => {
        const out = []
        for (const f of [() => ctx.files.read("a.txt", -1), () => ctx.files.read(5), () => ctx.files.list({})]) {
          try { await f() } catch (e) { out.push({ code: e.code, message: e.message }) }
        }
        return out
      }`
    )
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body.output).toEqual([
      {
        code: "validation_failed",
        message: "ctx.files.read(name, offset?): `offset`: Expected a non-negative number, actual -1"
      },
      { code: "validation_failed", message: "ctx.files.read(name, offset?): `name`: Expected string, actual 5" },
      { code: "validation_failed", message: "ctx.files.list(prefix?, cursor?): `prefix`: Expected string, actual {}" }
    ])
  })

  it("a bad ctx.connectors.invoke argument is refused in one line naming the argument, as ctx.files' are", async () => {
    const r = await runCode(
      node,
      admin,
      `export default async (input, ctx) => {
        const out = []
        for (const f of [() => ctx.connectors.invoke("nope", "getPet"), () => ctx.connectors.invoke()]) {
          try { await f() } catch (e) { out.push({ code: e.code, status: e.status, message: e.message }) }
        }
        return out
      }`
    )
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    const signature = "ctx.connectors.invoke(connection_id, operation_id, {body_params, query_params, path_params})"
    expect(r.body.output).toEqual([
      {
        code: "validation_failed",
        status: 400,
        message: `${signature}: \`connection_id\`: must be the id of a connection (a UUID), not "nope"`
      },
      { code: "validation_failed", status: 400, message: `${signature}: \`connection_id\`: is missing` }
    ])
  })

  it("ctx.files.list pages on: next_cursor passed back as cursor reaches every file, once", async () => {
    const prefix = `${uniqueName("paged")}/`
    const r = await runCode(
      node,
      admin,
      `export default async (input, ctx) => {
        for (let i = 0; i < 105; i++) await ctx.files.write(${
        JSON.stringify(prefix)
      } + String(i).padStart(3, "0") + ".txt", "x")
        const pages = []
        let cursor = null
        do {
          const page = await ctx.files.list(${JSON.stringify(prefix)}, cursor)
          pages.push(page.files.map((f) => f.name))
          cursor = page.next_cursor
        } while (cursor !== null && pages.length < 5)
        let refused
        try { await ctx.files.list(${JSON.stringify(prefix)}, "not-a-cursor") } catch (e) { refused = e.code }
        return { pages, refused }
      }`
    )
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    const { pages, refused } = r.body.output
    expect(pages.map((p: Array<string>) => p.length)).toEqual([100, 5])
    const names = pages.flat()
    expect(new Set(names).size).toBe(105)
    expect(names[0]).toBe(`${prefix}000.txt`)
    expect(names[104]).toBe(`${prefix}104.txt`)
    expect(refused).toBe("invalid_cursor")
  })

  it("lists every function by name at once, or pages them oldest first with limit and cursor", async () => {
    const org = await node.bootstrap()
    const ids: Array<string> = []
    for (const prefix of ["e", "d", "c", "b", "a"]) {
      ids.push((await createFunction(node, org.api_key, ECHO, { name: uniqueName(prefix) })).id)
    }
    // one written with microseconds (as by SQL), last on a page, is neither repeated nor skipped
    await withDatabase(
      node,
      (db) =>
        db.query("UPDATE functions SET created_at = created_at + interval '123 microseconds' WHERE id = $1", [ids[1]])
    )
    const all = await call(node, org.api_key, "GET", "/v1/functions")
    expect(Object.keys(all.body).sort()).toEqual(["items", "next_cursor", "total"])
    expect(all.body).toMatchObject({ total: 5, next_cursor: null })
    // without paging, by name as before
    expect(all.body.items.map((f: any) => f.id)).toEqual([...ids].reverse())
    const byAge = (await withDatabase(node, (db) =>
      db.query(
        "SELECT id FROM functions WHERE organization_id = $1 ORDER BY date_trunc('milliseconds', created_at), id",
        [org.organization_id]
      ))).rows.map((r) => r.id)
    const paged = await pageThrough(node, org.api_key, "/v1/functions", 2)
    expect(paged).toEqual({ ids: byAge, totals: [5, 5, 5] })
    const first = await call(node, org.api_key, "GET", "/v1/functions?limit=1")
    expect(first.body.items[0]).toMatchObject({ id: byAge[0], code: ECHO })
    const member = await addMember(node, org.api_key, "member")
    expect((await pageThrough(node, member.key, "/v1/functions", 4)).ids).toEqual(byAge)
    expectError(await call(node, org.api_key, "GET", "/v1/functions?limit=0"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/functions?cursor=zz"), 400, "invalid_cursor")
  })

  it("a name is unique in the organization: 409 function_name_taken on create and rename", async () => {
    const a = await createFunction(node, admin, ECHO)
    const b = await createFunction(node, admin, ECHO)
    expectError(
      await call(node, admin, "POST", "/v1/functions", { name: a.name, code: ECHO }),
      409,
      "function_name_taken"
    )
    expectError(await call(node, admin, "PATCH", `/v1/functions/${b.id}`, { name: a.name }), 409, "function_name_taken")
  })

  it("failures have their codes: function_error (422, message and stack line), function_timeout (504), function_memory (422), function_output_too_large (422)", async () => {
    const thrown = await runCode(node, admin, "export default async () => {\n  throw new RangeError('no such city')\n}")
    expectError(thrown, 422, "function_error")
    expect(thrown.body.error.message).toContain("RangeError: no such city")
    expect(thrown.body.error.message).toContain("function.js:2")
    expect(thrown.body.error.details.stack).toContain("function.js:2")
    // a thrown value that is not an error shows as its JSON, cut
    const plain = await runCode(node, admin, "export default async () => { throw { a: 1 } }")
    expectError(plain, 422, "function_error")
    expect(plain.body.error.message).toBe("Error: the function threw {\"a\":1}")
    const huge = await runCode(node, admin, "export default async () => { throw { big: 'x'.repeat(100000) } }")
    expectError(huge, 422, "function_error")
    expect(huge.body.error.message).toContain("the function threw {\"big\":\"xxx")
    expect(huge.body.error.message.length).toBeLessThan(400)
    const slow = await runCode(node, admin, "export default async () => { for (;;) {} }", {}, { timeout_ms: 300 })
    expectError(slow, 504, "function_timeout")
    const hungry = await runCode(
      node,
      admin,
      "export default async () => { const a = []; for (;;) a.push('x'.repeat(4096) + a.length) }",
      {},
      { memory_mb: 16, timeout_ms: 10_000 }
    )
    expectError(hungry, 422, "function_memory")
    const big = await runCode(node, admin, "export default async () => 'x'.repeat(2 * 1024 * 1024)")
    expectError(big, 422, "function_output_too_large")
    // the node keeps serving
    expect((await call(node, admin, "GET", "/v1/me")).status).toBe(200)
  })

  it("memory_mb is the call's cap: 40 MiB of strings fit under 64, not under 16", async () => {
    const code =
      "export default async () => { const a = []; for (let i = 0; i < 10_000; i++) a.push('x'.repeat(4000) + i); " +
      "return a.length }"
    const roomy = await runCode(node, admin, code, {}, { memory_mb: 64, timeout_ms: 20_000 })
    expect(roomy.status, JSON.stringify(roomy.body)).toBe(200)
    expect(roomy.body.output).toBe(10_000)
    expectError(await runCode(node, admin, code, {}, { memory_mb: 16, timeout_ms: 20_000 }), 422, "function_memory")
  })

  it("roles: Members list, read and invoke; writes need Builder+", async () => {
    const fn = await createFunction(node, admin, ECHO)
    const member = await addMember(node, admin, "member")
    expect((await call(node, member.key, "GET", "/v1/functions")).body.items.map((f: any) => f.id)).toContain(fn.id)
    expect((await call(node, member.key, "GET", `/v1/functions/${fn.id}`)).status).toBe(200)
    expect((await invokeFunction(node, member.key, fn.id, { x: 1 })).status).toBe(200)
    expectError(
      await call(node, member.key, "POST", "/v1/functions", { name: uniqueName(), code: ECHO }),
      403,
      "forbidden"
    )
    expectError(await call(node, member.key, "PATCH", `/v1/functions/${fn.id}`, { description: "x" }), 403, "forbidden")
    expectError(await call(node, member.key, "DELETE", `/v1/functions/${fn.id}`), 403, "forbidden")
    const builder = await orgKey(node, admin, "builder")
    expect((await call(node, builder.key, "POST", "/v1/functions", { name: uniqueName(), code: ECHO })).status).toBe(
      201
    )
    // a function is the organization's, as a knowledge base is: a key limited to agents reads and invokes it, and
    // changes none
    const agent = await call(node, admin, "POST", "/v1/agents", {
      name: "Scoped",
      model: { provider: "scripted", script: [{ text: "hi" }] }
    })
    const limited = await call(node, admin, "POST", "/v1/api-keys", {
      name: "limited",
      kind: "organization",
      role: "builder",
      agent_ids: [agent.body.id]
    })
    const key = limited.body.api_key
    expect((await invokeFunction(node, key, fn.id, { x: 1 })).status).toBe(200)
    for (
      const [method, path, body] of [
        ["POST", "/v1/functions", { name: uniqueName(), code: ECHO }],
        ["PATCH", `/v1/functions/${fn.id}`, { description: "x" }],
        ["DELETE", `/v1/functions/${fn.id}`, undefined]
      ] as const
    ) {
      const refused = await call(node, key, method, path, body)
      expectError(refused, 403, "forbidden")
      expect(refused.body.error.message).toContain("key limited to agents")
    }
  })

  it("no cross-organization access: another organization's function is a 404 for every verb", async () => {
    const fn = await createFunction(node, admin, ECHO)
    const other = await node.bootstrap()
    expect((await call(node, other.api_key, "GET", "/v1/functions")).body.items).toEqual([])
    expectError(await call(node, other.api_key, "GET", `/v1/functions/${fn.id}`), 404, "not_found")
    expectError(await call(node, other.api_key, "GET", `/v1/functions/${fn.id}/versions`), 404, "not_found")
    expectError(await invokeFunction(node, other.api_key, fn.id, {}), 404, "not_found")
    expectError(await call(node, other.api_key, "PATCH", `/v1/functions/${fn.id}`, { code: ECHO }), 404, "not_found")
    expectError(await call(node, other.api_key, "DELETE", `/v1/functions/${fn.id}`), 404, "not_found")
    const agent = (await call(node, other.api_key, "POST", "/v1/agents", {
      name: "theirs",
      model: { provider: "scripted", script: [{ text: "hi" }] }
    })).body
    expectError(await call(node, other.api_key, "PUT", `/v1/agents/${agent.id}/functions/${fn.id}`), 404, "not_found")
    expect((await call(node, admin, "GET", `/v1/functions/${fn.id}`)).status).toBe(200)
  })

  it("create, update, delete, attach and detach are audited", async () => {
    const fn = await createFunction(node, admin, ECHO)
    await call(node, admin, "PATCH", `/v1/functions/${fn.id}`, { description: "changed" })
    const agent = (await call(node, admin, "POST", "/v1/agents", {
      name: "holder",
      model: { provider: "scripted", script: [{ text: "hi" }] }
    })).body
    expect((await call(node, admin, "PUT", `/v1/agents/${agent.id}/functions/${fn.id}`)).status).toBe(200)
    const listed = await call(node, admin, "GET", `/v1/agents/${agent.id}/functions`)
    expect(listed.body.items).toMatchObject([{ function_id: fn.id, name: fn.name }])
    expect((await call(node, admin, "DELETE", `/v1/agents/${agent.id}/functions/${fn.id}`)).status).toBe(204)
    expect((await call(node, admin, "DELETE", `/v1/functions/${fn.id}`)).status).toBe(204)
    expectError(await call(node, admin, "GET", `/v1/functions/${fn.id}`), 404, "not_found")
    const actions = (await auditEvents(node, organizationId))
      .filter((e: any) => e.targets.some((t: any) => t.id === fn.id))
      .map((e: any) => e.action)
    expect(actions).toEqual([
      "CREATE_FUNCTION",
      "UPDATE_FUNCTION",
      "ATTACH_FUNCTION",
      "DETACH_FUNCTION",
      "DELETE_FUNCTION"
    ])
  })
})
