import type { FuzzTarget, Observation } from "./FuzzRun.js"
import { type FuzzWorld, ROLES } from "./FuzzWorld.js"
import type { Operation } from "./Operations.js"
import { type RawResponse, send } from "./RawHttp.js"
import { type FuzzRequest, pathOf, requestArbitrary } from "./RequestArbitrary.js"
import { BASE_PATH } from "./Upstream.js"
import { type Failure, judge } from "./Verdict.js"

/** What is unusual about a request: the features a failure's minimal counterexample keeps. */
export const featuresOf = (request: FuzzRequest): ReadonlyArray<string> => [
  ...request.path.filter((p) => p.source !== "own" && p.source !== "name").map((p) =>
    `${p.name}=${p.source === "format" ? "unknown" : p.source}`
  ),
  ...request.oddQuery.map((q) => `?${q}=odd`),
  ...(request.body.kind === "none" || request.body.kind === "valid" ? [] : [`body=${request.body.kind}`]),
  ...(request.body.otherIds ? ["body ids=other"] : []),
  ...(request.contentType === "application/json" || request.contentType === "none"
    ? []
    : [`content-type=${request.contentType}`])
]

const HANGS_PER_TYPE = 3

/** Seconds a long poll (`?wait=`, GET /v1/tasks/{id} and /v1/approvals/{id}) may hold its answer. */
const waitOf = (request: FuzzRequest) => {
  const wait = Number(request.query.find(([k]) => k === "wait")?.[1])
  return wait > 0 && wait <= 60 ? wait : 0
}

const responseText = (r: RawResponse) =>
  r.outcome === "timeout"
    ? `no answer within the timeout (${r.ms} ms)`
    : r.outcome === "connection_error"
    ? `no response: ${r.error}`
    : `${r.headers["content-type"] ?? "(no content-type)"} ${r.body}`

/**
 * The REST API as a fuzz target: requests over every operation of the served document, each sent as every
 * role of its organization and without a key. A combination (operation, content type) that once hung is not
 * sent again in the sampling pass, nor a content type that hung on HANGS_PER_TYPE routes: they are already
 * failures, and each repeat would wait out the timeout.
 */
export const restTarget = (
  baseUrl: string,
  operations: ReadonlyArray<Operation>,
  world: FuzzWorld,
  timeoutMs: number,
  /** The target API's requests since the last call that left the connectors' base path. */
  escaped: () => ReadonlyArray<string>
): FuzzTarget<FuzzRequest> => {
  const byKey = new Map(operations.map((op) => [op.key, op]))
  const hung = new Set<string>()
  const hungByType = new Map<string, Set<string>>()
  const statuses = new Map<number | string, number>()
  let sent = 0
  let skipped = 0
  const callers = [...ROLES, "anonymous"] as const

  const slow = (request: FuzzRequest) => byKey.get(request.operation)!.method === "GET" && waitOf(request) > 0

  const execute = async (request: FuzzRequest, only?: string): Promise<ReadonlyArray<Observation>> => {
    const op = byKey.get(request.operation)!
    const org = world.orgs.find((o) => o.label === request.org)!
    const hangKey = `${op.key} ${request.contentType}`
    const hungRoutes = hungByType.get(request.contentType) ?? new Set()
    if (only === undefined && (hung.has(hangKey) || hungRoutes.size >= HANGS_PER_TYPE)) {
      skipped++
      return []
    }
    const path = pathOf(op, request)
    const timeout = timeoutMs + waitOf(request) * 1000
    const body = request.body.text === undefined ? undefined : Buffer.from(request.body.text, "utf8")
    const who = callers.filter((c) => only === undefined || only === `${c} of ${org.label}`)
    const observed = await Promise.all(who.map(async (caller) => {
      const headers: Record<string, string> = { ...request.headers }
      if (request.contentType !== "none") headers["content-type"] = request.contentType
      const shown = { ...headers }
      if (caller !== "anonymous") {
        headers["x-api-key"] = org.people[caller].key
        shown["x-api-key"] = `<${caller} key of ${org.label}>`
      }
      const r = await send(baseUrl, { method: op.method, path, headers, body }, timeout)
      sent++
      const status = r.outcome === "answered" ? r.status : r.outcome
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
      if (r.outcome === "timeout") {
        hung.add(hangKey)
        hungByType.set(request.contentType, hungRoutes.add(op.key))
      }
      const observe = (failure: Failure): Observation => ({
        ...failure,
        route: op.key,
        features: featuresOf(request),
        caller: `${caller} of ${org.label}`,
        example: {
          caller: `${caller} of ${org.label}`,
          method: op.method,
          path,
          headers: shown,
          body: request.body.text,
          status,
          response: responseText(r)
        }
      })
      return { failures: judge(op, request, r).map(observe), reachedTarget: r.status === 200, observe }
    }))
    // the target cannot tell the callers apart: a call that left the base path is on each that got through.
    // A long poll (a read: it calls no target) answers while later runs go on: what the target saw meanwhile
    // is theirs, checked by them
    const left = only === undefined && slow(request) ? [] : escaped()
    const through = observed.some((o) => o.reachedTarget) ? observed.filter((o) => o.reachedTarget) : observed
    const escapes = left.length === 0 ? [] : through.map((o) => {
      const seen = o.observe({ kind: "upstream_escape", detail: `the target was called outside ${BASE_PATH}` })
      return {
        ...seen,
        example: { ...seen.example, response: `${seen.example.response}  (the target saw ${left.join(", ")})` }
      }
    })
    return [...observed.flatMap((o) => o.failures), ...escapes]
  }

  return {
    name: "REST",
    arbitrary: requestArbitrary(operations, world),
    execute,
    slow,
    stats: () => [
      `${sent} requests over ${operations.length} operations; ${skipped} generated cases not sent: their ` +
      `operation and content type, or their content type on ${HANGS_PER_TYPE} routes, hung already`,
      `statuses: ${
        [...statuses.entries()].sort(([a], [b]) => String(a).localeCompare(String(b))).map(([s, n]) => `${s}×${n}`)
          .join(" ")
      }`
    ]
  }
}
