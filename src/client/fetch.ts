import createClient from "openapi-fetch"
import type { paths } from "./openapi.js"

export type { components, operations, paths } from "./openapi.js"

/** Where a node is and the API key to call it with. */
export interface ClientOptions {
  readonly baseUrl: string
  readonly apiKey?: string | undefined
  readonly fetch?: (request: Request) => Promise<Response>
}

/**
 * A plain-`fetch` client typed from the OpenAPI document (openapi-fetch): every path, parameter, body and
 * response shape is checked at compile time, with no Effect needed.
 */
export const createFetchClient = (options: ClientOptions) =>
  createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    ...(options.apiKey === undefined ? {} : { headers: { authorization: `Bearer ${options.apiKey}` } }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch })
  })
