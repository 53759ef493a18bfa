import { FastCheck as fc, type Schema } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { openSession } from "../mcp/support.js"
import type { FuzzTarget, Observation } from "./FuzzRun.js"
import { type FuzzWorld, ROLES } from "./FuzzWorld.js"
import { hostileId, withIds } from "./Hostile.js"
import { type RawResponse, send } from "./RawHttp.js"
import { wireArbitrary } from "./RequestArbitrary.js"
import type { Failure } from "./Verdict.js"

export type ArgumentsKind = "valid" | "own_ids" | "mixed" | "non_object" | "absent"

/** One generated `tools/call`, sent as every role of organization A. */
export interface McpCall {
  readonly tool: string
  readonly kind: ArgumentsKind
  readonly arguments: unknown
  /** Arguments given a value from outside the contract (name=source). */
  readonly changed: ReadonlyArray<string>
  readonly otherIds: boolean
}

interface ToolContract {
  readonly name: string
  readonly properties: ReadonlyArray<string>
  readonly input: Schema.Schema<any, any> | undefined
}

const TOOLS_DIR = fileURLToPath(new URL("../../src/mcp/tools/", import.meta.url))

/** The tools as `tools/list` serves them, with each one's input contract (its module's default export). */
export const toolContracts = async (served: ReadonlyArray<any>): Promise<ReadonlyArray<ToolContract>> => {
  const inputs = new Map<string, Schema.Schema<any, any>>()
  for (const file of Fs.readdirSync(TOOLS_DIR).filter((f) => /\.ts$/.test(f))) {
    const tool = (await import(pathToFileURL(Path.join(TOOLS_DIR, file)).href)).default
    if (typeof tool?.name === "string" && tool.input !== undefined) inputs.set(tool.name, tool.input)
  }
  return served.map((t) => ({
    name: t.name,
    properties: Object.keys(t.inputSchema?.properties ?? {}),
    input: inputs.get(t.name)
  }))
}

const NON_OBJECT: ReadonlyArray<unknown> = [[1, 2], "str", null, 42, true, []]

const argumentValue = (
  world: FuzzWorld,
  name: string,
  own: ReadonlyArray<string>
): fc.Arbitrary<readonly [unknown, string]> => {
  const [, b] = world.orgs
  const other = [...(b.ids[name]?.use ?? []), ...(b.ids[name]?.spend ?? [])]
  const tagged = (source: string) => (v: unknown) => [v, source] as const
  return fc.oneof(
    ...(own.length > 0 ? [fc.constantFrom(...own).map(tagged("own"))] : []),
    ...(other.length > 0 ? [fc.constantFrom(...other).map(tagged("other"))] : []),
    hostileId.map(tagged("hostile")),
    fc.constantFrom("a\u0000b", "\u0000").map(tagged("nul")),
    fc.constantFrom(300_000).map((n) => "x".repeat(n)).map(tagged("huge")),
    fc.constantFrom(-1, 0, 1e308, 0.5, Number.MAX_SAFE_INTEGER + 2, null, true, [], {}, [1, 2]).map(tagged("odd_type")),
    fc.jsonValue({ maxDepth: 2 }).map(tagged("random"))
  )
}

/** Tools that change what they name: they get the `spend` ids. */
const SPENDING = new Set(["cancel_task", "decide_approval"])

const callArbitrary = (tools: ReadonlyArray<ToolContract>, world: FuzzWorld): fc.Arbitrary<McpCall> => {
  const [a] = world.orgs
  const forTool = (tool: ToolContract): fc.Arbitrary<McpCall> => {
    const ownIds = (field: string) => {
      const pool = a.ids[field]
      const ids = pool === undefined ? [] : SPENDING.has(tool.name) || pool.use.length === 0 ? pool.spend : pool.use
      // its synchronous invoke waits out the tool's 50 s for a person to decide: slow, and by design
      return tool.name === "invoke_agent" ? ids.filter((id) => id !== a.pausingAgent) : ids
    }
    const valid = wireArbitrary(tool.input) ?? fc.constant({})
    const call = (kind: ArgumentsKind, args: unknown, changed: ReadonlyArray<string> = [], otherIds = false) => ({
      tool: tool.name,
      kind,
      arguments: args,
      changed,
      otherIds
    })
    const names = tool.properties.length > 0 ? tool.properties : ["id"]
    return fc.oneof(
      { withCrossShrink: true },
      { weight: 3, arbitrary: valid.map((v) => call("valid", v ?? {})) },
      {
        weight: 3,
        arbitrary: fc.record({ v: valid, pick: fc.nat({ max: 1000 }) }).map(({ pick, v }) =>
          call("own_ids", withIds(v ?? {}, ownIds, pick).value)
        )
      },
      {
        weight: 4,
        arbitrary: fc.record({
          v: valid,
          pick: fc.nat({ max: 1000 }),
          changes: fc.uniqueArray(
            fc.constantFrom(...names).chain((name) =>
              argumentValue(world, name, ownIds(name)).map((x) => [name, ...x] as const)
            ),
            { minLength: 1, maxLength: 3, selector: ([name]) => name }
          )
        }).map(({ changes, pick, v }) => {
          const base = withIds(v ?? {}, ownIds, pick).value as Record<string, unknown>
          const args = { ...base, ...Object.fromEntries(changes.map(([name, value]) => [name, value])) }
          return call(
            "mixed",
            args,
            changes.map(([name, , source]) => `${name}=${source}`),
            changes.some(([, , source]) => source === "other")
          )
        })
      },
      { weight: 2, arbitrary: fc.constantFrom(...NON_OBJECT).map((v) => call("non_object", v)) },
      { weight: 1, arbitrary: fc.constant(call("absent", undefined)) }
    )
  }
  return fc.oneof(
    { weight: 20, arbitrary: fc.constantFrom(...tools).chain(forTool) },
    {
      weight: 1,
      arbitrary: fc.constantFrom("no_such_tool", "", "\u0000").chain((name) =>
        forTool({ name, properties: [], input: undefined })
      )
    }
  )
}

/** The JSON-RPC message in a response, plain JSON or the last event of an SSE stream. */
const messageOf = (r: RawResponse): any => {
  const type = String(r.headers["content-type"] ?? "")
  const text = type.includes("text/event-stream")
    ? r.body.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).at(-1) ?? ""
    : r.body
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Reads and lists only: their answer to another organization's id is a filtered list, not its object. */
const LISTS = /^(list_|search_)/

export const judgeMcp = (call: McpCall, r: RawResponse): ReadonlyArray<Failure> => {
  if (r.outcome === "timeout") return [{ kind: "hang", detail: "no answer in time" }]
  if (r.outcome === "connection_error") return [{ kind: "no_answer", detail: r.error ?? "connection error" }]
  if (r.status >= 500) return [{ kind: "server_error", detail: `HTTP ${r.status}` }]
  if (r.status !== 200) return []
  const failures: Array<Failure> = []
  const message = messageOf(r)
  if (message === undefined) return [{ kind: "mcp_internal_error", detail: "the answer is not a JSON-RPC message" }]
  if (message.error?.code === -32603) failures.push({ kind: "mcp_internal_error", detail: "JSON-RPC -32603" })
  else if (r.body.includes("internal_error")) {
    failures.push({ kind: "mcp_internal_error", detail: "`internal_error` in the answer" })
  }
  if (call.kind === "non_object" && message.error?.code !== -32602) {
    failures.push({
      kind: "mcp_arguments",
      detail: `non-object arguments answered ${
        message.error === undefined ? "a result" : message.error.code
      }, not -32602`
    })
  }
  if (call.otherIds && !LISTS.test(call.tool) && message.result !== undefined && message.result.isError !== true) {
    failures.push({ kind: "cross_organization", detail: "a result for the other organization's id" })
  }
  return failures
}

/** How long a call may take by design: `wait` seconds of get_task, 50 s of a synchronous invoke_agent. */
const documentedWaitMs = (call: McpCall) => {
  const args = (typeof call.arguments === "object" && call.arguments !== null ? call.arguments : {}) as any
  const wait = typeof args.wait === "number" && args.wait > 0 && args.wait <= 60 ? args.wait * 1000 : 0
  return call.tool === "invoke_agent" && args.asynchronous !== true ? 50_000 + wait : wait
}

/** MCP `tools/call` as a fuzz target: every tool, valid and hostile arguments, as each role of org A. */
export const mcpTarget = async (
  baseUrl: string,
  world: FuzzWorld,
  timeoutMs: number
): Promise<FuzzTarget<McpCall>> => {
  const sessions = {} as Record<string, string>
  for (const role of ROLES) sessions[role] = await openSession(baseUrl, world.mcpTokens[role])
  const headers = (role: (typeof ROLES)[number]) => ({
    authorization: `Bearer ${world.mcpTokens[role]}`,
    "mcp-session-id": sessions[role]!,
    "mcp-protocol-version": "2025-11-25",
    accept: "application/json, text/event-stream",
    "content-type": "application/json"
  })
  const listed = await send(baseUrl, {
    method: "POST",
    path: "/mcp/",
    headers: headers("member"),
    body: Buffer.from(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "tools/list" }))
  }, timeoutMs)
  const tools = await toolContracts(messageOf(listed)?.result?.tools ?? [])
  if (tools.length === 0) throw new Error(`tools/list: ${listed.status} ${listed.body.slice(0, 300)}`)
  let id = 1
  let sent = 0
  const outcomes = new Map<string, number>()

  const execute = async (call: McpCall, only?: string): Promise<ReadonlyArray<Observation>> => {
    const who = ROLES.filter((role) => only === undefined || only === `${role} of A`)
    const observed = await Promise.all(who.map(async (role) => {
      const params = call.kind === "absent" ? { name: call.tool } : { name: call.tool, arguments: call.arguments }
      const text = JSON.stringify({ jsonrpc: "2.0", id: id++, method: "tools/call", params })
      const r = await send(
        baseUrl,
        { method: "POST", path: "/mcp/", headers: headers(role), body: Buffer.from(text) },
        timeoutMs + documentedWaitMs(call)
      )
      sent++
      const message = r.outcome === "answered" ? messageOf(r) : undefined
      const outcome = r.outcome !== "answered"
        ? r.outcome
        : r.status !== 200
        ? `HTTP ${r.status}${typeof message?.error?.code === "string" ? ` ${message.error.code}` : ""}`
        : message?.error !== undefined
        ? `error ${message.error.code}`
        : message?.result?.isError === true
        ? "tool error"
        : "result"
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
      return judgeMcp(call, r).map((failure): Observation => ({
        ...failure,
        route: `tools/call ${call.tool}`,
        features: [`arguments=${call.kind}`, ...call.changed],
        caller: `${role} of A`,
        example: {
          caller: `${role} of A`,
          method: "POST",
          path: "/mcp/ tools/call",
          headers: { authorization: `<${role} bearer token of A>`, "mcp-session-id": "<its session>" },
          body: text,
          status: r.outcome === "answered" ? r.status : r.outcome,
          response: r.body
        }
      }))
    }))
    return observed.flat()
  }

  return {
    name: "MCP",
    arbitrary: callArbitrary(tools, world),
    execute,
    stats: () => [
      `${sent} tools/call over ${tools.length} tools`,
      `outcomes: ${[...outcomes.entries()].map(([k, n]) => `${k}×${n}`).join(", ")}`
    ]
  }
}
