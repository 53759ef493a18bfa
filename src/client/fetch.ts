import createClient from "openapi-fetch"
import type { paths } from "./openapi.js"

export type { components, operations, paths, webhooks } from "./openapi.js"

/** Where a node is and the API key to call it with. */
export interface ClientOptions {
  readonly baseUrl: string
  readonly apiKey?: string | undefined
  readonly fetch?: (request: Request) => Promise<Response>
}

/**
 * A plain-`fetch` client typed from the OpenAPI document (openapi-fetch): every path, parameter, body and
 * response shape is checked at compile time, with no Effect needed. The key goes in `x-api-key`, the one
 * header REST takes (`Authorization: Bearer` is refused with `bearer_not_supported`). `data` is typed as the
 * JSON answer; the event streams (and a streamed invoke) are read with `parseAs: "stream"`.
 */
export const createFetchClient = (options: ClientOptions) =>
  createClient<paths, "application/json">({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    ...(options.apiKey === undefined ? {} : { headers: { "x-api-key": options.apiKey } }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch })
  })
