import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, call } from "../access/support.js"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createFunction, invokeFunction, runCode } from "./support.js"

/**
 * The escape and abuse corpus (issue 25): every case is contained (an answer with its code, never a 500 or a
 * hang) and the node keeps serving after each one.
 */

let node: TestNode
let admin: string
let target: TargetServer
const ids: Record<string, string> = {}

beforeAll(async () => {
  target = await startTargetServer()
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
  const org = await node.bootstrap()
  admin = org.api_key
  const connector = await createConnector(node, admin, petstore(target.url))
  ids.connector = connector.id
  ids.connection = (await createConnection(node, admin, connector.id, {
    name: "pets",
    credentials: { type: "api_key", value: "s3cret-value-never-in-sandbox" }
  })).id
  // someone else's personal connection in the same organization
  const member = await addMember(node, admin, "builder")
  ids.personal = (await createConnection(node, member.key, connector.id, {
    name: "mine",
    access_scope: "personal",
    credentials: { type: "api_key", value: "personal-secret" }
  })).id
  // another organization's connection
  const other = await node.bootstrap()
  const theirs = await createConnector(node, other.api_key, petstore(target.url))
  ids.foreign = (await createConnection(node, other.api_key, theirs.id, {
    name: "theirs",
    credentials: { type: "api_key", value: "foreign-secret" }
  })).id
  // a connection whose target is a private address: the egress guard refuses it
  const internal = await createConnector(node, admin, petstore("http://10.1.2.3"))
  ids.internal = (await createConnection(node, admin, internal.id, {
    name: "internal",
    credentials: { type: "api_key", value: "k" }
  })).id
})
afterAll(async () => {
  await node?.stop()
  await target?.close()
})

type Expect =
  | { readonly status: 200; readonly output?: unknown; readonly check?: (body: any) => void }
  | { readonly status: number; readonly code: string | ReadonlyArray<string> }

interface Case {
  readonly name: string
  readonly code: string
  readonly input?: unknown
  readonly extra?: Record<string, unknown>
  readonly expect: Expect
}

const fast = { timeout_ms: 400 }
const timeout: Expect = { status: 504, code: "function_timeout" }
const thrown: Expect = { status: 422, code: "function_error" }
/** Code that would fail every call is loaded at create, and refused there. */
const refused: Expect = { status: 400, code: "invalid_code" }
const memory: Expect = { status: 422, code: "function_memory" }
const answer = (output: unknown): Expect => ({ status: 200, output })
const body = (js: string) => `export default async (input, ctx) => { ${js} }`

const hostGlobals = [
  "process",
  "require",
  "module",
  "exports",
  "Buffer",
  "fetch",
  "XMLHttpRequest",
  "WebSocket",
  "setTimeout",
  "setInterval",
  "setImmediate",
  "queueMicrotask",
  "WebAssembly",
  "std",
  "os",
  "importScripts",
  "Deno",
  "Bun",
  "global",
  "__dirname"
]

const cases: ReadonlyArray<Case> = [
  // constructor chains: every Function constructor reachable is the sandbox's own
  ...[
    ["Function via a function's constructor", "return (function(){}).constructor('return typeof process')()"],
    ["Function called directly", "return Function('return typeof require')()"],
    ["AsyncFunction constructor", "return await (async () => {}).constructor('return typeof fetch')()"],
    ["GeneratorFunction constructor", "return (function*(){}).constructor('yield typeof Buffer')().next().value"],
    ["ctx.log's constructor", "return ctx.log.constructor('return typeof process')()"],
    [
      "ctx.connectors.invoke's constructor chain",
      "return ctx.connectors.invoke.constructor.constructor('return typeof require')()"
    ],
    [
      "ctx's prototype constructor chain",
      "return Object.getPrototypeOf(ctx).constructor.constructor('return typeof setTimeout')()"
    ],
    ["array constructor chain", "return [].constructor.constructor('return typeof module')()"],
    ["indirect eval", "return (0, eval)('typeof process')"],
    [
      "a rejected promise's error constructor chain",
      "try { await ctx.connectors.invoke('x', 'y') } catch (e) { return e.constructor.constructor('return typeof process')() }"
    ]
  ].map(([name, js]): Case => ({ name: name!, code: body(js!), expect: answer("undefined") })),
  {
    name: "globalThis holds nothing of the host",
    code: body("return Reflect.ownKeys(globalThis).map(String)"),
    expect: {
      status: 200,
      check: (b) => {
        for (const g of hostGlobals) expect(b.output).not.toContain(g)
      }
    }
  },
  // host globals probed one by one
  ...hostGlobals.map((g): Case => ({
    name: `typeof ${g}`,
    code: body(`return typeof globalThis.${g}`),
    expect: answer("undefined")
  })),
  // modules: nothing resolves
  ...[
    "fs",
    "node:fs",
    "child_process",
    "./other.js",
    "https://example.com/x.js",
    "data:text/javascript,export default 1"
  ].map(
    (specifier): Case => ({
      name: `import('${specifier}') fails`,
      code: body(`try { await import(${JSON.stringify(specifier)}); return 'loaded' } catch (e) { return 'refused' }`),
      expect: answer("refused")
    })
  ),
  {
    name: "a static import fails the module",
    code: "import fs from 'node:fs'\nexport default async () => 1",
    expect: refused
  },
  {
    name: "a re-export of a host module fails",
    code: "export * from 'os'\nexport default async () => 1",
    expect: refused
  },
  // prototype pollution of what the host hands in
  {
    name: "ctx is frozen",
    code: body("try { ctx.log = null; return 'changed' } catch (e) { return 'frozen' }"),
    expect: answer("frozen")
  },
  {
    name: "ctx.connectors is frozen",
    code: body("try { ctx.connectors.invoke = () => 1; return 'changed' } catch (e) { return 'frozen' }"),
    expect: answer("frozen")
  },
  {
    name: "a __proto__ key in the input is plain data",
    code: body("return { polluted: ({}).admin === undefined ? 'no' : 'yes', own: Object.keys(input) }"),
    input: JSON.parse("{\"__proto__\": {\"admin\": true}}"),
    expect: { status: 200, check: (b) => expect(b.output).toEqual({ polluted: "no", own: ["__proto__"] }) }
  },
  {
    name: "a __proto__ key in the output does not pollute the host",
    code: body("return JSON.parse('{\"__proto__\": {\"hostPolluted\": true}}')"),
    expect: { status: 200, check: () => expect(({} as any).hostPolluted).toBeUndefined() }
  },
  {
    name: "replacing JSON.stringify changes nothing outside",
    code: body("JSON.stringify = () => '\"hijacked\"'; JSON.parse = () => 1; return { fine: true }"),
    expect: answer({ fine: true })
  },
  {
    name: "replacing Promise.prototype.then changes nothing outside (the host reads the promise state)",
    code: body("Promise.prototype.then = function () { return 1 }; return { fine: true }"),
    expect: answer({ fine: true })
  },
  {
    name: "replacing Reflect.apply and Object.freeze keeps ctx working",
    code: body("Reflect.apply = () => 1; Object.freeze = (o) => o; ctx.log('still'); return 'ok'"),
    expect: answer("ok")
  },
  {
    name: "an output whose toJSON throws",
    code: body("return { toJSON() { throw new Error('nope') } }"),
    expect: thrown
  },
  {
    name: "an output with a looping getter",
    code: body("return { get x() { for (;;) {} } }"),
    extra: fast,
    expect: timeout
  },
  { name: "a cyclic output", code: body("const o = {}; o.o = o; return o"), expect: thrown },
  {
    name: "a Proxy output whose traps throw",
    code: body("return new Proxy({}, { ownKeys() { throw new Error('trap') }, get() { throw new Error('trap') } })"),
    expect: thrown
  },
  {
    name: "ctx arguments that are not JSON are refused",
    code: body("try { await ctx.connectors.invoke(() => 1, Symbol('x')) } catch (e) { return e.code }"),
    expect: answer("validation_failed")
  },
  {
    name: "cyclic ctx arguments throw in the function",
    code: body("const p = {}; p.p = p; try { await ctx.connectors.invoke('a', 'b', p) } catch (e) { return e.name }"),
    expect: answer("TypeError")
  },
  // infinite loops
  { name: "for (;;)", code: body("for (;;) {}"), extra: fast, expect: timeout },
  {
    name: "a loop that catches the interrupt",
    code: body("for (;;) { try { for (;;) {} } catch (e) {} }"),
    extra: fast,
    expect: timeout
  },
  {
    name: "a loop in finally",
    code: body("try { for (;;) {} } finally { for (;;) {} }"),
    extra: fast,
    expect: timeout
  },
  {
    name: "an endless microtask chain",
    code: body("const f = () => Promise.resolve().then(f); f(); await new Promise(() => {})"),
    extra: fast,
    // stopped at its deadline, or found never settling between job batches: either way contained (CI saw both)
    expect: { status: 0, code: ["function_timeout", "function_error"] }
  },
  {
    name: "a loop at module top level",
    code: "for (;;) {}\nexport default async () => 1",
    extra: fast,
    expect: refused
  },
  {
    name: "a sort comparator that never returns",
    code: body("[3, 1, 2].sort(() => { for (;;) {} })"),
    extra: fast,
    expect: timeout
  },
  // deep recursion
  { name: "unbounded recursion", code: body("const f = () => f() + 1; return f()"), expect: thrown },
  {
    name: "recursion through toString",
    code: body("const o = { toString() { return String(o) } }; return String(o)"),
    expect: thrown
  },
  { name: "a deeply nested JSON.parse", code: body("return JSON.parse('['.repeat(200000))"), expect: thrown },
  {
    name: "a deeply nested output",
    code: body("let a = []; for (let i = 0; i < 200000; i++) a = [a]; return a"),
    extra: fast,
    expect: { status: 0, code: ["function_error", "function_timeout"] }
  },
  {
    name: "recursion that catches its stack overflow",
    code: body("const f = (n) => { try { return f(n + 1) } catch (e) { return f(n + 1) } }; return f(0)"),
    extra: fast,
    expect: { status: 0, code: ["function_timeout", "function_error"] }
  },
  // memory bombs
  {
    name: "an array of growing strings",
    code: body("const a = []; for (;;) a.push('x'.repeat(4096) + a.length)"),
    extra: { memory_mb: 16, timeout_ms: 10_000 },
    expect: memory
  },
  {
    name: "objects without end",
    code: body("const a = []; for (;;) a.push({ a: a.length, b: [1, 2, 3] })"),
    extra: { memory_mb: 16, timeout_ms: 10_000 },
    expect: memory
  },
  {
    name: "a Map without end",
    code: body("const m = new Map(); for (let i = 0;; i++) m.set(i, 'v' + i)"),
    extra: { memory_mb: 16, timeout_ms: 10_000 },
    expect: memory
  },
  {
    name: "one huge ArrayBuffer",
    code: body("return new ArrayBuffer(1024 * 1024 * 1024).byteLength"),
    extra: { memory_mb: 16 },
    expect: { status: 0, code: ["function_memory", "function_error"] }
  },
  {
    name: "string doubling",
    code: body("let s = 'x'; for (;;) s = s + s"),
    extra: { memory_mb: 16, timeout_ms: 10_000 },
    expect: { status: 0, code: ["function_memory", "function_error"] }
  },
  {
    name: "typed arrays kept alive",
    code: body("const a = []; for (;;) a.push(new Uint8Array(512 * 1024))"),
    extra: { memory_mb: 16, timeout_ms: 10_000 },
    expect: memory
  },
  {
    name: "a memory bomb caught by the function leaves it able to answer",
    code: body("try { const a = []; for (;;) a.push('y'.repeat(4096) + a.length) } catch (e) { return 'survived' }"),
    extra: { memory_mb: 16, timeout_ms: 10_000 },
    expect: { status: 0, code: ["function_memory", "survived"] }
  },
  // huge outputs and logs
  {
    name: "a 2 MiB string output",
    code: body("return 'x'.repeat(2 * 1024 * 1024)"),
    expect: { status: 422, code: "function_output_too_large" }
  },
  {
    name: "an output of many small items",
    code: body("return new Array(400000).fill('abcd')"),
    expect: { status: 422, code: "function_output_too_large" }
  },
  {
    name: "log spam is capped",
    code: body("for (let i = 0; i < 10000; i++) ctx.log('line', i); return 'done'"),
    expect: {
      status: 200,
      check: (b) => {
        expect(b.output).toBe("done")
        expect(b.logs_truncated).toBe(true)
        expect(b.logs.length).toBeLessThanOrEqual(200)
      }
    }
  },
  {
    name: "one huge log line is cut to its first 4 KiB of UTF-8, not replaced",
    code: body("ctx.log('z'.repeat(100000)); ctx.log('é'.repeat(5000)); ctx.log({ big: 'y'.repeat(10000) }); return 1"),
    expect: {
      status: 200,
      check: (b) => {
        expect(b.logs).toHaveLength(3)
        expect(b.logs_truncated).toBe(true)
        for (const line of b.logs) {
          expect(Buffer.byteLength(line)).toBeLessThanOrEqual(4096)
          expect(Buffer.byteLength(line)).toBeGreaterThan(4000)
          expect(line.endsWith("…")).toBe(true)
          expect(line).not.toContain("\uFFFD")
        }
        expect(b.logs[0].startsWith("zzzz")).toBe(true)
        expect(b.logs[1].startsWith("éééé")).toBe(true)
        expect(b.logs[2].startsWith(`{"big":"yyyy`)).toBe(true)
      }
    }
  },
  // catastrophic regular expressions
  {
    name: "(a+)+$ on a near miss",
    code: body("return /(a+)+$/.test('a'.repeat(40) + 'b')"),
    extra: fast,
    expect: timeout
  },
  {
    name: "(\\w+\\s?)*$ on a near miss",
    code: body("return /^(\\w+\\s?)*$/.test('ab '.repeat(30) + '!')"),
    extra: fast,
    expect: timeout
  },
  {
    name: "a catastrophic replace",
    code: body("return 'x'.repeat(5000).replace(/(x+x+)+y/, '')"),
    extra: fast,
    expect: timeout
  },
  {
    name: "a catastrophic pattern in input_schema stalls only its worker",
    code: body("return input"),
    input: "a".repeat(40) + "!",
    extra: { timeout_ms: 300, input_schema: { type: "string", pattern: "^(a+)+$" } },
    expect: timeout
  },
  // promises that never settle
  { name: "await a promise that never settles", code: body("await new Promise(() => {})"), expect: thrown },
  {
    name: "a top-level await that never settles",
    code: "await new Promise(() => {})\nexport default async () => 1",
    expect: refused
  },
  { name: "a default export that is not a function", code: "export default 42", expect: refused },
  { name: "code that does not parse", code: "export default async () => {", expect: refused },
  // connections the caller may not use, and the egress guard
  ...([
    ["another organization's connection", "foreign", "not_found"],
    ["someone else's personal connection", "personal", "not_found"],
    ["a connection id that does not exist", "missing", "not_found"],
    ["a connection to a private address (egress guard)", "internal", "egress_refused"]
  ] as const).map(([name, which, code]): Case => ({
    name,
    code: body(
      "try { await ctx.connectors.invoke(input.id, 'listPets', {}); return 'called' } catch (e) { return e.code }"
    ),
    input: { which },
    expect: answer(code)
  }))
]

const resolveInput = (c: Case) => {
  const input = c.input as { which?: string } | undefined
  if (input?.which === undefined) return c.input
  return { id: input.which === "missing" ? "00000000-0000-4000-8000-000000000000" : ids[input.which] }
}

describe("sandbox escape and abuse corpus", () => {
  it("has at least 50 cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(50)
  })

  for (const c of cases) {
    it(`contains: ${c.name}`, async () => {
      const r = await runCode(node, admin, c.code, resolveInput(c), c.extra)
      const e = c.expect
      if ("code" in e) {
        const codes = typeof e.code === "string" ? [e.code] : e.code
        const got = r.status === 200 ? r.body.output : r.body?.error?.code
        expect(codes, JSON.stringify(r.body)).toContain(got)
        if (e.status !== 0) expect(r.status).toBe(e.status)
        expect(r.status).not.toBe(500)
      } else {
        expect(r.status, JSON.stringify(r.body)).toBe(200)
        if ("output" in e) expect(r.body.output).toEqual(e.output)
        e.check?.(r.body)
      }
      // the node keeps serving
      expect((await call(node, admin, "GET", "/v1/me")).status).toBe(200)
    }, 30_000)
  }

  it("a call changes nothing the next call sees: globals and prototypes start fresh", async () => {
    const polluter = await createFunction(
      node,
      admin,
      body("Object.prototype.polluted = 1; globalThis.leftover = 'x'; Array.prototype.push = null; return 'done'")
    )
    expect((await invokeFunction(node, admin, polluter.id)).body.output).toBe("done")
    const reader = await runCode(
      node,
      admin,
      body("return [({}).polluted, typeof globalThis.leftover, typeof [].push]")
    )
    expect(reader.body.output).toEqual([null, "undefined", "function"])
  })

  it("a connector call goes through as the caller, with credentials the function never sees, recorded", async () => {
    const r = await runCode(
      node,
      admin,
      body(
        "const answer = await ctx.connectors.invoke(input.id, 'getPet', { path_params: { petId: '7' } }); " +
          "return { status: answer.status, path: answer.body.path, " +
          "seen: JSON.stringify(Reflect.ownKeys(globalThis).map(String)) + JSON.stringify(ctx) }"
      ),
      { id: ids.connection }
    )
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    expect(r.body.output).toMatchObject({ status: 200, path: "/pets/7" })
    expect(r.body.output.seen).not.toContain("s3cret-value-never-in-sandbox")
    expect(target.requests.at(-1)!.headers["x-api-key"]).toBe("s3cret-value-never-in-sandbox")
    const invalid = await runCode(
      node,
      admin,
      body(
        "try { await ctx.connectors.invoke(input.id, 'createPet', { body_params: {} }) } catch (e) { return [e.code, e.status] }"
      ),
      { id: ids.connection }
    )
    expect(invalid.body.output).toEqual(["validation_failed", 400])
    const bare = await runCode(node, admin, body("return (await ctx.connectors.invoke(input.id, 'listPets')).status"), {
      id: ids.connection
    })
    expect(bare.body.output).toBe(200)
  })

  it("ten spinning functions at once are all stopped, and other requests are answered meanwhile", async () => {
    const spin = await createFunction(node, admin, body("for (;;) {}"), { timeout_ms: 1500 })
    const calls = Array.from({ length: 10 }, () => invokeFunction(node, admin, spin.id))
    await new Promise((r) => setTimeout(r, 200))
    const during = await call(node, admin, "GET", "/v1/me")
    expect(during.status).toBe(200)
    const results = await Promise.all(calls)
    expect(results.map((r) => r.body.error.code)).toEqual(Array(10).fill("function_timeout"))
    const after = await runCode(node, admin, body("return 'fine'"))
    expect(after.body.output).toBe("fine")
  }, 60_000)
})
