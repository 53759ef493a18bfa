import { Effect, Option, Schema, Stream } from "effect"
import { AUDIT_CSV_COLUMNS, AuditEvent } from "../../schema/Audit.js"
import { BadRequest } from "../../schema/Errors.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { formatTimestamp } from "../../schema/Timestamp.js"
import { requireOrganizationKey } from "../identity/IdentityPolicy.js"
import { rangeForwards } from "../support/TimeRange.js"
import { type AuditQuery, AuditRepo, type AuditRow, toAuditEvent } from "./AuditRepo.js"

export type ExportFormat = "csv" | "json" | "ndjson"

const EXPORT_PAGE = 500

const encodeCursor = (seq: number) => Buffer.from(JSON.stringify([seq])).toString("base64url")
const decodeCursor = (cursor: string): number | undefined => {
  try {
    const [seq] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    return Number.isSafeInteger(seq) && seq > 0 ? seq : undefined
  } catch {
    return undefined
  }
}

/**
 * RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. A text that a spreadsheet
 * would run as a formula (it starts with `=`, `+`, `-`, `@`, a tab or a carriage return: an agent name, an
 * email, a user-chosen id) is prefixed with `'`, as OWASP advises against CSV injection; numbers stay numbers.
 */
export const csvField = (value: string | number | null) => {
  const raw = value === null ? "" : String(value)
  const text = typeof value === "string" && /^[=+\-@\t\r]/.test(raw) ? `'${raw}` : raw
  return /[",\r\n]/.test(text) ? `"${text.replaceAll("\"", "\"\"")}"` : text
}

const csvLine = (row: AuditRow) =>
  AUDIT_CSV_COLUMNS.map((column) => {
    const value = column === "time"
      ? formatTimestamp(row.time)
      : column === "targets" || column === "details"
      ? (row[column] === null ? null : JSON.stringify(row[column]))
      : row[column]
    return csvField(value)
  }).join(",") + "\r\n"

// the same wire form as the list endpoint's items
const encodeEvent = Schema.encodeSync(AuditEvent)
const jsonOf = (row: AuditRow) => JSON.stringify(encodeEvent(toAuditEvent(row)))

/** The audit log as Admins read it: pages newest first, exports of whole ranges oldest first. */
export class AuditReader extends Effect.Service<AuditReader>()("audit/AuditReader", {
  effect: Effect.gen(function*() {
    const repo = yield* AuditRepo

    const list = Effect.fn("AuditReader.list")(
      function*(principal: Principal, query: AuditQuery & { readonly limit?: number; readonly cursor?: string }) {
        yield* requireOrganizationKey(principal, Policy.readAuditLog)
        yield* rangeForwards(query.from, query.to)
        const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor)
        if (query.cursor !== undefined && before === undefined) {
          return yield* BadRequest.of(
            "`cursor` is not one this API returned; start again without it.",
            undefined,
            "invalid_cursor"
          )
        }
        const limit = query.limit ?? 100
        const rows = yield* repo.page(principal.organizationId, query, before, limit + 1)
        const page = rows.slice(0, limit)
        return {
          items: page.map(toAuditEvent),
          next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.seq) : null
        }
      }
    )

    /** Streams the range a page at a time, so an export of any size holds one page in memory. */
    const exportRange = Effect.fn("AuditReader.exportRange")(
      function*(principal: Principal, query: AuditQuery, format: ExportFormat) {
        yield* requireOrganizationKey(principal, Policy.exportAuditLog)
        yield* rangeForwards(query.from, query.to)
        // one page of rows becomes one chunk of text
        const pages = Stream.paginateEffect(
          0,
          (afterSeq: number) =>
            repo.pageAscending(principal.organizationId, query, afterSeq, EXPORT_PAGE).pipe(
              Effect.map((page) =>
                [page, page.length < EXPORT_PAGE ? Option.none() : Option.some(page[page.length - 1]!.seq)] as const
              )
            )
        ).pipe(Stream.filter((page) => page.length > 0))
        const encoder = new TextEncoder()
        const text: Stream.Stream<string> = format === "csv"
          ? Stream.concat(
            Stream.make(AUDIT_CSV_COLUMNS.join(",") + "\r\n"),
            Stream.map(pages, (p) => p.map(csvLine).join(""))
          )
          : format === "ndjson"
          ? Stream.map(pages, (p) => p.map((row) => jsonOf(row) + "\n").join(""))
          : Stream.make("[").pipe(
            Stream.concat(Stream.mapAccum(pages, true, (first, p) => [
              false,
              (first ? "\n" : ",\n") + p.map(jsonOf).join(",\n")
            ])),
            Stream.concat(Stream.make("\n]\n"))
          )
        return { format, body: Stream.map(text, (s) => encoder.encode(s)) }
      }
    )

    return { list, exportRange } as const
  }),
  dependencies: [AuditRepo.Default]
}) {}
