import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { ErrorCodes } from "../../schema/Errors.js"
import { errorsPage, errorsPagePath } from "../../scripts/error-codes.js"
import { sentErrorCodes } from "./SentErrorCodes.js"

const root = Path.resolve(import.meta.dirname, "../..")

/** Codes the source names that never reach a client, and why (so they are not in the catalogue). */
const NOT_SENT = new Map([
  ["connection_credentials_unreadable", "an unreadable connection secret is a defect: the client gets internal_error"],
  ["caller_gone", "the caller went away before the target answered: only the invocation record keeps it"]
])

const keyOf = (surface: string, code: string) => `${surface === "oauth" ? "oauth" : "rest"} ${code}`

describe("the error code catalogue (schema/Errors.ts ErrorCodes)", () => {
  const sent = sentErrorCodes(root)

  it("is what docs/reference/errors.md shows: the page is the one scripts/error-codes.ts writes", () => {
    const onDisk = Fs.readFileSync(errorsPagePath, "utf8")
    expect(onDisk, "docs/reference/errors.md is stale: run `node --import tsx scripts/error-codes.ts`").toBe(
      errorsPage()
    )
  })

  it("has every code the source sends", () => {
    const listed = new Set(ErrorCodes.map((e) => keyOf(e.surface, e.code)))
    const missing = sent.filter((s) => !listed.has(keyOf(s.kind, s.code)) && !NOT_SENT.has(s.code))
      .map((s) => `${s.code} (${s.kind}) at ${s.file}:${s.line}`)
    expect(missing, "add these to ErrorCodes in schema/Errors.ts, then regenerate docs/reference/errors.md").toEqual(
      []
    )
  })

  it("lists no code the source no longer sends", () => {
    const found = new Set(sent.map((s) => keyOf(s.kind, s.code)))
    const stale = ErrorCodes.filter((e) => !found.has(keyOf(e.surface, e.code))).map((e) => `${e.code} (${e.surface})`)
    expect(stale).toEqual([])
  })

  it("finds the codes the old table lacked, at the edge, in the MCP endpoint, in tasks and in model calls", () => {
    const codes = new Set(sent.map((s) => s.code))
    const expected = ["type_required", "missing_token", "idempotency_conflict", "model_not_configured"]
    for (const code of [...expected, "model_egress_refused", "unsupported_media_type"]) expect(codes).toContain(code)
  })

  it("is a contract: one entry per surface, code and status, each with a status where it answers a request", () => {
    const keys = ErrorCodes.map((e) => `${e.surface} ${e.code} ${e.status}`)
    expect(new Set(keys).size).toBe(keys.length)
    for (const e of ErrorCodes) {
      expect(e.code).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/)
      expect(e.meaning).not.toContain("\n")
      if (e.surface === "model") expect(e.status).toBeNull()
      else expect(e.status).toBeGreaterThanOrEqual(300)
    }
  })
})
