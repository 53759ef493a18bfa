import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/**
 * Every REST error has one wire shape: `{"error":{"code","message","request_id","details"}}`.
 * `code` is stable and machine-readable; `message` tells a person what to do.
 */
export const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String.annotations({ description: "Stable machine-readable error code." }),
    message: Schema.String.annotations({ description: "What went wrong and what to do about it." }),
    request_id: Schema.optional(Schema.String).annotations({ description: "The request's `x-request-id`." }),
    details: Schema.optional(Schema.Unknown).annotations({ description: "Structured details, e.g. failing fields." })
  })
}).annotations({ identifier: "ErrorBody" })
export type ErrorBody = typeof ErrorBody.Type

const fields = {
  code: Schema.String,
  message: Schema.String,
  details: Schema.optional(Schema.Unknown)
}

interface ErrorFields {
  readonly _tag: string
  readonly code: string
  readonly message: string
  readonly details?: unknown
}

/** The wire schema of an error class: the envelope on the wire, the tagged class in code. */
const onTheWire = <A extends ErrorFields, I extends ErrorFields>(
  self: Schema.Schema<A, I>,
  tag: string,
  status: number
) => {
  return Schema.transform(ErrorBody, self, {
    strict: false,
    decode: (body) => ({ _tag: tag, code: body.error.code, message: body.error.message, details: body.error.details }),
    encode: (e: I) => ({
      error: { code: e.code, message: e.message, ...(e.details === undefined ? {} : { details: e.details }) }
    })
  }).annotations(HttpApiSchema.annotations({ status }))
}

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", fields) {
  static readonly of = (message: string, details?: unknown, code = "bad_request") =>
    new BadRequest({ code, message, details })
}
export const BadRequestWire = onTheWire(BadRequest, "BadRequest", 400)

export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", fields) {
  static readonly of = (message: string, code = "unauthenticated") => new Unauthenticated({ code, message })
}
export const UnauthenticatedWire = onTheWire(Unauthenticated, "Unauthenticated", 401)

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", fields) {
  static readonly of = (message: string, code = "forbidden") => new Forbidden({ code, message })
}
export const ForbiddenWire = onTheWire(Forbidden, "Forbidden", 403)

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {
  static readonly of = (what: string, id?: string) =>
    new NotFound({ code: "not_found", message: id === undefined ? `${what} not found.` : `${what} '${id}' not found.` })
}
export const NotFoundWire = onTheWire(NotFound, "NotFound", 404)

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields) {
  static readonly of = (message: string, code = "conflict") => new Conflict({ code, message })
}
export const ConflictWire = onTheWire(Conflict, "Conflict", 409)

export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", fields) {
  static readonly of = (message: string, details?: unknown) =>
    new ServiceUnavailable({ code: "unavailable", message, details })
}
export const ServiceUnavailableWire = onTheWire(ServiceUnavailable, "ServiceUnavailable", 503)

export class Unprocessable extends Schema.TaggedError<Unprocessable>()("Unprocessable", fields) {
  static readonly of = (message: string, code = "unprocessable", details?: unknown) =>
    new Unprocessable({ code, message, details })
}
export const UnprocessableWire = onTheWire(Unprocessable, "Unprocessable", 422)

export class BadGateway extends Schema.TaggedError<BadGateway>()("BadGateway", fields) {
  static readonly of = (message: string, code = "upstream_unreachable") => new BadGateway({ code, message })
}
export const BadGatewayWire = onTheWire(BadGateway, "BadGateway", 502)

export class GatewayTimeout extends Schema.TaggedError<GatewayTimeout>()("GatewayTimeout", fields) {
  static readonly of = (message: string) => new GatewayTimeout({ code: "upstream_timeout", message })
}
export const GatewayTimeoutWire = onTheWire(GatewayTimeout, "GatewayTimeout", 504)

export class PaymentRequired extends Schema.TaggedError<PaymentRequired>()("PaymentRequired", fields) {
  static readonly of = (message: string, details?: unknown) =>
    new PaymentRequired({ code: "budget_exhausted", message, details })
}
export const PaymentRequiredWire = onTheWire(PaymentRequired, "PaymentRequired", 402)

export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", fields) {
  /** `details.retry_after_seconds` is also sent as the `Retry-After` header. */
  static readonly of = (message: string, retryAfterSeconds: number) =>
    new TooManyRequests({ code: "rate_limited", message, details: { retry_after_seconds: retryAfterSeconds } })
}
export const TooManyRequestsWire = onTheWire(TooManyRequests, "TooManyRequests", 429)
