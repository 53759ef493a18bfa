import { DateTime, Schema } from "effect"

/** ISO 8601 UTC with microseconds and `Z` (spec 2.6), e.g. `2026-11-23T10:15:30.123000Z`. */
export const formatTimestamp = (date: Date): string => date.toISOString().slice(0, 23) + "000Z"

export const Timestamp = Schema.transform(
  Schema.String.pipe(Schema.pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)),
  Schema.DateFromSelf,
  {
    strict: true,
    decode: (s) => new Date(s.slice(0, 23) + "Z"),
    encode: formatTimestamp
  }
).annotations({
  identifier: "Timestamp",
  description: "ISO 8601 UTC timestamp with microseconds and a `Z` suffix."
})

/**
 * A date a client sends (a filter bound): ISO 8601, a real calendar date, within the years 1–9999 that
 * every store and client can represent. `not-a-date` and `9999-99-99` are refused at the contract.
 */
export const DateParam = Schema.String.annotations({
  identifier: "Date",
  description: "a string to be decoded into a Date"
}).pipe(
  // JavaScript reads 2026-02-30 as March 2: a day past its month's end is refused here, before that
  Schema.filter((text) => {
    const ymd = /^(\d{4})-(\d{2})-(\d{2})/.exec(text)
    if (ymd === null) return true
    const [year, month, day] = [Number(ymd[1]), Number(ymd[2]), Number(ymd[3])]
    const last = new Date(0)
    last.setUTCFullYear(year, month, 0)
    return month >= 1 && month <= 12 && day >= 1 && day <= last.getUTCDate()
  }),
  // JavaScript reads a date-time without a zone in the node's own time zone: every bound is UTC unless it says
  Schema.compose(Schema.transform(Schema.String, Schema.String, {
    strict: true,
    decode: (text) => /^[+-]?\d{4,6}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/i.test(text) ? `${text}Z` : text,
    encode: (text) => text
  })),
  Schema.compose(Schema.Date),
  Schema.filter((date) => {
    const year = date.getUTCFullYear()
    return year >= 1 && year <= 9999
  }, { message: () => "must be a date between the years 1 and 9999" })
).annotations({
  description: "An ISO 8601 date or date-time, e.g. `2026-11-25` or `2026-11-25T10:00:00Z`; one without a zone is UTC.",
  // over the inner checks too ("Expected a valid Date, actual Invalid Date")
  message: () => ({
    message: "must be an ISO 8601 date between the years 1 and 9999, e.g. 2026-11-25T10:00:00Z",
    override: true
  })
})

export const now = DateTime.unsafeNow
