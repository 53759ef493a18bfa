import { Either, ParseResult, Schema } from "effect"
import { isJsonContentType } from "./Hostile.js"
import { isInvoke, type Operation } from "./Operations.js"
import type { RawResponse } from "./RawHttp.js"
import type { FuzzRequest } from "./RequestArbitrary.js"
import { FORGED_REQUEST_ID } from "./Upstream.js"

/** Error statuses any operation may answer, listed or not. */
export const STANDARD_ERRORS: ReadonlySet<number> = new Set([400, 401, 403, 404, 405, 409, 413, 415, 422, 429])

export type FailureKind =
  | "hang"
  | "no_answer"
  | "server_error"
  | "undocumented_status"
  | "wrong_route"
  | "error_envelope"
  | "response_schema"
  | "cross_organization"
  | "media_type"
  | "mcp_internal_error"
  | "mcp_arguments"
  | "forged_header"
  | "upstream_escape"

/** What one response did wrong. `detail` is stable across runs: with the route, it names a distinct failure. */
export interface Failure {
  readonly kind: FailureKind
  readonly detail: string
}

const header = (r: RawResponse, name: string) => {
  const v = r.headers[name]
  return Array.isArray(v) ? v.join(", ") : v ?? ""
}

const parseJson = (text: string): { ok: true; value: any } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** The one REST error body: `{error: {code, message, request_id}}`, JSON, marked as ours, the id echoed. */
export const envelopeProblem = (r: RawResponse): string | undefined => {
  const type = header(r, "content-type")
  if (!/^application\/json\b/i.test(type)) return `content-type '${type.split(";")[0]}'`
  const parsed = parseJson(r.body)
  if (!parsed.ok) return "body is not JSON"
  const error = parsed.value?.error
  if (typeof error !== "object" || error === null) return "no `error` object"
  if (typeof error.code !== "string" || error.code === "") return "no `error.code`"
  if (typeof error.message !== "string") return "no `error.message`"
  if (typeof error.request_id !== "string") return "no `error.request_id`"
  if (error.request_id !== header(r, "x-request-id")) return "`error.request_id` is not the x-request-id"
  if (header(r, "x-switchyard-error") !== "true") return "no `x-switchyard-error: true`"
  return undefined
}

/** The first decode issue of a 2xx body against the contract's success schema, by path (stable). */
const schemaProblem = (schema: Schema.Schema<any, any>, value: unknown): string | undefined => {
  const decoded = Schema.decodeUnknownEither(schema)(value)
  if (Either.isRight(decoded)) return undefined
  const issue = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]
  // the message without the actual value, so one cause is one failure
  const message = issue?.message.split(/, actual|\nactual/)[0]!.slice(0, 120)
  return issue === undefined
    ? "does not decode"
    : `\`${issue.path.map((k) => typeof k === "number" ? "[]" : String(k)).join(".") || "(body)"}\`: ${message}`
}

const successProblem = (op: Operation, r: RawResponse): string | undefined => {
  const types = op.successTypes.get(r.status) ?? []
  const type = header(r, "content-type")
  if (types.length === 0) return r.body === "" ? undefined : "a body where the document lists none"
  if (!types.some((t) => type.toLowerCase().startsWith(t.toLowerCase()))) {
    return `content-type '${type.split(";")[0]}' (documented: ${types.join(", ")})`
  }
  const schema = op.successes.get(r.status)
  // the contract's schema describes the JSON form (NDJSON or CSV exports are checked by type only)
  if (schema === undefined || !/^application\/json\b/i.test(type)) return undefined
  const parsed = parseJson(r.body)
  if (!parsed.ok) return "body is not JSON"
  const problem = schemaProblem(schema, parsed.value)
  return problem === undefined ? undefined : `body does not match the contract: ${problem}`
}

/** Whether a 405 is plausible: a dot segment or an empty value can turn the path into another route's. */
const reshapesPath = (request: FuzzRequest) => request.path.some((p) => ["", ".", ".."].includes(p.value))

/** Everything wrong with one response to `request` on `op`, sent as some role (or none). */
export const judge = (op: Operation, request: FuzzRequest, r: RawResponse): ReadonlyArray<Failure> => {
  if (r.outcome === "timeout") {
    return [{ kind: "hang", detail: `no answer in time (content-type ${request.contentType})` }]
  }
  if (r.outcome === "connection_error") return [{ kind: "no_answer", detail: r.error ?? "connection error" }]
  const failures: Array<Failure> = []
  const code = parseJson(r.body)
  const errorCode = code.ok && typeof code.value?.error?.code === "string" ? ` ${code.value.error.code}` : ""
  // an empty or dot-segment value sends the request to another route: only the route-free rules hold then
  const ownRoute = !reshapesPath(request)
  if (r.status >= 500) failures.push({ kind: "server_error", detail: `${r.status}${errorCode}` })
  else if (ownRoute && !op.statuses.has(r.status) && !STANDARD_ERRORS.has(r.status)) {
    failures.push({ kind: "undocumented_status", detail: `${r.status}${errorCode}` })
  }
  if (r.status === 405 && ownRoute) {
    failures.push({ kind: "wrong_route", detail: `405${errorCode} on the operation's own method and path` })
  }
  if (header(r, "x-request-id").includes(FORGED_REQUEST_ID)) {
    failures.push({ kind: "forged_header", detail: `${r.status}: the target's x-request-id passed through` })
  }
  // a connector invoke passes the target's own errors through, told apart by having no x-switchyard-error
  const passedThrough = isInvoke(op) && header(r, "x-switchyard-error") === ""
  if (r.status >= 400 && !passedThrough) {
    const problem = envelopeProblem(r)
    if (problem !== undefined) failures.push({ kind: "error_envelope", detail: `${r.status}: ${problem}` })
  }
  if (r.status >= 200 && r.status < 300) {
    if (header(r, "x-switchyard-error") !== "") {
      failures.push({ kind: "forged_header", detail: `${r.status} carries x-switchyard-error` })
    }
    const crossed = request.path.filter((p) => p.source === "other").map((p) => p.name)
    if (request.body.otherIds) crossed.push("body ids")
    if (crossed.length > 0) {
      failures.push({
        kind: "cross_organization",
        detail: `${r.status} with the other organization's ${crossed.join(", ")}`
      })
    }
    if (op.takesBody && request.body.kind !== "none" && !isJsonContentType(request.contentType)) {
      failures.push({ kind: "media_type", detail: `${r.status} for a body sent as ${request.contentType}` })
    }
    const problem = ownRoute ? successProblem(op, r) : undefined
    if (problem !== undefined) failures.push({ kind: "response_schema", detail: `${r.status}: ${problem}` })
  }
  return failures
}
