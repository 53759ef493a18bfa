import { Data } from "effect"

/** An RFC 6749 / 7591 error: answered as `{"error", "error_description"}`, the shape OAuth clients parse. */
export class OAuthError extends Data.TaggedError("OAuthError")<{
  readonly error: string
  readonly description: string
  readonly status: number
  /** A confidential client whose secret was wrong: counted against its rate limit. */
  readonly failedClientId?: string
}> {
  static readonly of = (error: string, description: string, status = 400) =>
    new OAuthError({ error, description, status })
}
