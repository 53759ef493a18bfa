import createClient, { defaultBodySerializer } from "openapi-fetch"
import type { paths } from "./openapi.js"

export type { components, operations, paths, webhooks } from "./openapi.js"

/** Where a node is and the API key to call it with. */
export interface ClientOptions {
  readonly baseUrl: string
  readonly apiKey?: string | undefined
  readonly fetch?: (request: Request) => Promise<Response>
}

/**
 * A body that is already what goes on the wire (an upload's file) is sent as it is: openapi-fetch would send a
 * string as JSON text, quotes and all, and a Blob or bytes as `{}`.
 */
const bodySerializer = (body: unknown, headers?: unknown) =>
  typeof body === "string" || body instanceof Blob || body instanceof ArrayBuffer || ArrayBuffer.isView(body) ||
    body instanceof ReadableStream || body instanceof URLSearchParams || body instanceof FormData
    ? body
    // openapi-fetch hands the headers on (a form-encoded body needs them); its types say one argument
    : (defaultBodySerializer as (body: unknown, headers?: unknown) => string)(body, headers)

/**
 * A plain-`fetch` client typed from the OpenAPI document (openapi-fetch): every path, parameter, body and
 * response shape is checked at compile time, with no Effect needed. The key goes in `x-api-key`, the one
 * header REST takes (`Authorization: Bearer` is refused with `bearer_not_supported`). `data` is typed as the
 * JSON answer; the event streams (and a streamed invoke) are read with `parseAs: "stream"`. A raw `body`
 * (string, Blob, bytes, stream, FormData) goes out unchanged, with the `content-type` the call gives.
 */
export const createFetchClient = (options: ClientOptions) =>
  createClient<paths, "application/json">({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    bodySerializer,
    ...(options.apiKey === undefined ? {} : { headers: { "x-api-key": options.apiKey } }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch })
  })

/** An error answer met by `allItems`: the envelope's fields, and the HTTP status. */
export class SwitchyardError extends Error {
  readonly status: number
  readonly code: string
  readonly request_id: string | undefined
  readonly details: unknown
  constructor(status: number, body: unknown) {
    const error = (body as { error?: { code?: unknown; message?: unknown; request_id?: unknown; details?: unknown } })
      ?.error
    const code = typeof error?.code === "string" ? error.code : `http_${status}`
    super(`${code}: ${typeof error?.message === "string" ? error.message : JSON.stringify(body)}`)
    this.name = "SwitchyardError"
    this.status = status
    this.code = code
    this.request_id = typeof error?.request_id === "string" ? error.request_id : undefined
    this.details = error?.details
  }
}

/**
 * Every item of a cursor-paged list (`{items, next_cursor}`: files, tasks, the audit log, …), page after page:
 * `page(after)` asks for one page with `after` spread into its query (`{}`, then `{cursor}`). An error answer
 * throws a `SwitchyardError`.
 *
 *     for await (const file of allItems((after) => client.GET("/v1/files", { params: { query: { ...after } } })))
 */
export async function* allItems<T>(
  page: (after: { readonly cursor?: string }) => Promise<{
    readonly data?: { readonly items: ReadonlyArray<T>; readonly next_cursor: string | null } | undefined
    readonly error?: unknown
    readonly response: Response
  }>
): AsyncGenerator<T, void, undefined> {
  let after: { readonly cursor?: string } = {}
  for (;;) {
    const answer = await page(after)
    if (answer.data === undefined) throw new SwitchyardError(answer.response.status, answer.error)
    yield* answer.data.items
    if (answer.data.next_cursor === null) return
    after = { cursor: answer.data.next_cursor }
  }
}
