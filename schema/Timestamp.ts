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

export const now = DateTime.unsafeNow
