import { HttpBody, HttpServerResponse } from "@effect/platform"
import * as Zlib from "node:zlib"

/** The same for the node's whole life and large: the API reference (~3.8 MB, the document and Scalar's script)
 * and the OpenAPI document (~0.6 MB). */
const STATIC = new Set(["/docs", "/openapi.json"])

/** Whether a request's Accept-Encoding takes gzip. */
export const acceptsGzip = (acceptEncoding: string | undefined) => /\bgzip\b/.test(acceptEncoding ?? "")

/**
 * `response` gzipped when it is one of the static documents and the client accepts gzip: ~4x smaller for
 * /docs, ~12x for /openapi.json. Each is compressed once, on its first such request (50 ms for /docs), and
 * the bytes kept; the API's answers are not compressed (small, and made per request).
 */
export const makeStaticCompression = () => {
  const cache = new Map<string, { readonly length: number; readonly gzip: Uint8Array }>()
  return (
    method: string,
    url: string,
    acceptEncoding: string | undefined,
    response: HttpServerResponse.HttpServerResponse
  ): HttpServerResponse.HttpServerResponse => {
    const path = url.split("?", 1)[0]!
    if (method !== "GET" || !STATIC.has(path) || response.status !== 200) return response
    const body = response.body
    if (body._tag !== "Uint8Array") return response
    const vary = HttpServerResponse.setHeader(response, "vary", "accept-encoding")
    if (!acceptsGzip(acceptEncoding)) return vary
    let cached = cache.get(path)
    if (cached === undefined || cached.length !== body.body.length) {
      cached = { length: body.body.length, gzip: Zlib.gzipSync(body.body) }
      cache.set(path, cached)
    }
    return HttpServerResponse.setHeader(
      HttpServerResponse.setBody(vary, HttpBody.uint8Array(cached.gzip, body.contentType)),
      "content-encoding",
      "gzip"
    )
  }
}
