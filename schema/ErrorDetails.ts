import { Schema } from "effect"

/**
 * What an error's `details` holds, by code, for the OpenAPI document (the error classes carry `details` as
 * `unknown`: a new kind of detail never fails to encode). Each field is sent only by the codes named in its
 * description; other keys may come with other codes.
 */
export const ErrorDetails = Schema.Struct(
  {
    issues: Schema.optional(Schema.Array(
      Schema.Struct({
        path: Schema.String.annotations({ description: "The failing field, dot-separated (`model.provider`)." }),
        message: Schema.String
      }).annotations({ identifier: "ValidationIssue", description: "One failing field of a request." })
    )).annotations({ description: "`validation_failed`: every failing field." }),
    retry_after_seconds: Schema.optional(Schema.Number).annotations({
      description: "`rate_limited`: also the `Retry-After` header."
    }),
    problems: Schema.optional(Schema.Array(
      Schema.Struct({
        field: Schema.String,
        line: Schema.NullOr(Schema.Number),
        message: Schema.String
      }).annotations({ identifier: "ManifestProblem", description: "One problem of a `switchyard.yaml`." })
    )).annotations({ description: "`invalid_manifest`: each field, line and message." }),
    pointer: Schema.optional(Schema.String).annotations({
      description: "`invalid_openapi`: a JSON pointer to the part of the document that cannot be imported."
    }),
    field: Schema.optional(Schema.String).annotations({
      description: "`invalid_duration`, `invalid_cron`, `invalid_timezone`: the field at fault."
    }),
    limit_usd: Schema.optional(Schema.Number).annotations({ description: "`budget_exhausted`: the budget." }),
    spent_usd: Schema.optional(Schema.Number).annotations({ description: "`budget_exhausted`: spent this period." }),
    period: Schema.optional(Schema.String).annotations({ description: "`budget_exhausted`: the budget's period." }),
    oldest_after: Schema.optional(Schema.String).annotations({
      description: "`events_expired`: the oldest kept event follows this id."
    })
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
).annotations({
  identifier: "ErrorDetails",
  description: "Structured details of an error; which fields come depends on `code`."
})
