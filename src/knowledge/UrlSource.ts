import { Effect } from "effect"
import { fetch as undiciFetch } from "undici"
import { PayloadTooLarge, Unprocessable } from "../../schema/Errors.js"
import { Egress } from "../connectors/Egress.js"
import { checkUrl } from "../connectors/egress/GuardedDispatcher.js"

const MAX_REDIRECTS = 5
const FETCH_TIMEOUT_MS = 30_000

/** What a URL answered: its bytes, media type, and the URL they came from after redirects. */
export interface Fetched {
  readonly bytes: Uint8Array
  readonly contentType: string | undefined
  readonly url: string
}

const notAllowed = (message: string, details: unknown) =>
  Unprocessable.of(`The document URL is not allowed: ${message}.`, "document_url_not_allowed", details)

const unreachable = (message: string, details?: unknown) =>
  Unprocessable.of(`The document URL cannot be fetched: ${message}.`, "document_url_unreachable", details)

/**
 * Fetches a document's URL the way connectors reach third parties: through the egress guard's dispatcher
 * (internal addresses refused on the address dialled, unless SWITCHYARD_EGRESS_ALLOW opens them). Redirects
 * are followed by hand, at most 5, each target checked again; the body is read up to `maxBytes` (then 413);
 * the whole fetch has 30 s.
 */
export class UrlSource extends Effect.Service<UrlSource>()("knowledge/UrlSource", {
  effect: Effect.gen(function*() {
    const egress = yield* Egress

    const refusal = (url: string) =>
      Effect.promise(() => checkUrl(url, egress.policy).catch(() => undefined)).pipe(
        Effect.flatMap((refused) =>
          refused === undefined
            ? Effect.void
            : Effect.fail(notAllowed(egress.explain(refused), { host: refused.host, reason: refused.reason }))
        )
      )

    const fetchOnce = (url: string, maxBytes: number, signal: AbortSignal) =>
      Effect.tryPromise({
        try: async () => {
          const response = await undiciFetch(url, {
            dispatcher: egress.dispatcher,
            redirect: "manual",
            signal,
            headers: { accept: "text/html, text/markdown, text/plain, application/pdf;q=0.9, */*;q=0.1" }
          })
          if (response.status >= 300 && response.status < 400) {
            await response.body?.cancel()
            const location = response.headers.get("location")
            return { redirect: location === null ? null : new URL(location, url).toString(), status: response.status }
          }
          if (!response.ok) {
            await response.body?.cancel()
            return { failed: response.status }
          }
          const declared = Number(response.headers.get("content-length") ?? Number.NaN)
          if (declared > maxBytes) {
            await response.body?.cancel()
            return { tooLarge: true as const }
          }
          const parts: Array<Uint8Array> = []
          let size = 0
          for await (const part of response.body ?? []) {
            size += part.length
            if (size > maxBytes) return { tooLarge: true as const }
            parts.push(part)
          }
          return { bytes: Buffer.concat(parts, size), contentType: response.headers.get("content-type") ?? undefined }
        },
        catch: (e) => {
          const refused = egress.refusal(e)
          if (refused !== undefined) {
            return notAllowed(egress.explain(refused), { host: refused.host, reason: refused.reason })
          }
          if (signal.aborted) return unreachable(`no complete answer within ${FETCH_TIMEOUT_MS / 1000} s`)
          return unreachable(egress.explain(e))
        }
      })

    /** The document at `url`, or a 422 (not allowed, unreachable, an error status) or 413 (too large). */
    const fetch = Effect.fn("UrlSource.fetch")(function*(url: string, maxBytes: number) {
      const signal = AbortSignal.timeout(FETCH_TIMEOUT_MS)
      let at = url
      for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
        const parsed = URL.canParse(at) ? new URL(at) : undefined
        if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
          return yield* unreachable(`${at} is not an http(s) URL`)
        }
        if (parsed.username !== "" || parsed.password !== "") {
          return yield* unreachable("a URL with credentials in it is not fetched")
        }
        yield* refusal(at)
        const answer = yield* fetchOnce(at, maxBytes, signal)
        if ("tooLarge" in answer) {
          return yield* PayloadTooLarge.of(
            `The document at the URL is larger than this server accepts: at most ${maxBytes} bytes ` +
              `(SWITCHYARD_MAX_DOCUMENT_BYTES).`,
            "document_too_large"
          )
        }
        if ("failed" in answer) {
          return yield* unreachable(`it answered HTTP ${answer.failed}`, { status: answer.failed })
        }
        if ("redirect" in answer) {
          if (answer.redirect === null) {
            return yield* unreachable(`it answered HTTP ${answer.status} without a Location`, { status: answer.status })
          }
          at = answer.redirect
          continue
        }
        return { bytes: answer.bytes, contentType: answer.contentType, url: at } satisfies Fetched
      }
      return yield* unreachable(`more than ${MAX_REDIRECTS} redirects`)
    })

    return { fetch } as const
  }),
  dependencies: [Egress.Default]
}) {}
