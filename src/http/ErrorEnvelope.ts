import type { ErrorBody } from "../../schema/Errors.js"

export interface ErrorFields {
  readonly code: string
  readonly message: string
  readonly details?: unknown
}

/** The one REST error body, for every path that writes one (the Effect stack and the plain-Node fast path). */
export const errorEnvelope = (error: ErrorFields, requestId: string): ErrorBody => ({
  error: {
    code: error.code,
    message: error.message,
    request_id: requestId,
    ...(error.details === undefined ? {} : { details: error.details })
  }
})

/** Marks our own errors, to tell them from a target API's errors passed through. */
export const OWN_ERROR_HEADER = { "x-switchyard-error": "true" } as const
