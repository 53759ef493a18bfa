import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import * as Crypto from "node:crypto"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { seeOther, type SetCookie, withCookies } from "../web/Html.js"
import { ConnectorsLive } from "./ConnectorsLive.js"
import { OAuthAuthorizations } from "./OAuthAuthorizations.js"

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const page = (status: number, title: string, message: string, back?: string) =>
  HttpServerResponse.text(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)} · Switchyard</title>` +
      `<meta name="viewport" content="width=device-width,initial-scale=1">` +
      `<style>body{font:16px system-ui,sans-serif;max-width:34rem;margin:4rem auto;padding:0 1rem;color:#222}</style></head>` +
      `<body><h1>${escape(title)}</h1><p>${escape(message)}</p>` +
      (back === undefined ? "" : `<p><a href="${escape(back)}">Back to the console</a></p>`) +
      `</body></html>`,
    {
      status,
      contentType: "text/html; charset=utf-8",
      headers: {
        "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
        "cache-control": "no-store",
        "referrer-policy": "no-referrer"
      }
    }
  )

/**
 * Where the console asks to come back to after the provider's consent: a path of this node's console, never
 * another origin (`//evil.example`, `https://…`, `/\evil`) nor a path that leaves `/console` once normalized.
 * Anything else is ignored: the flow ends on the node's own page, as without `return_to`.
 */
export const consoleReturnPath = (value: string | null | undefined): string | undefined => {
  if (value === null || value === undefined || value.length > 2048) return undefined
  if (!value.startsWith("/") || value.startsWith("//") || /[\\\s\u0000-\u001f]/.test(value)) return undefined
  const base = new URL("http://node.invalid")
  let url: URL
  try {
    url = new URL(value, base)
  } catch {
    return undefined
  }
  if (url.origin !== base.origin) return undefined
  if (url.pathname !== "/console" && !url.pathname.startsWith("/console/")) return undefined
  return `${url.pathname}${url.search}`
}

const decoded = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/** Binds the return path to one sign-in: the cookie only counts for the state it was set with. */
const stateTag = (state: string) => Crypto.createHash("sha256").update(`return:${state}`).digest("base64url")

/** The browser side of connecting an OAuth2 connector: start (redirect to the provider) and callback. */
export const ConnectionOAuthRoutes = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* HttpLayerRouter.HttpRouter
    const authorizations = yield* OAuthAuthorizations
    const config = yield* SwitchyardConfig
    // __Host- needs Secure, which needs https: a plain name on a local http install
    const secure = config.baseUrl.startsWith("https://")
    const returnCookie = secure ? "__Host-sy_oauth_return" : "sy_oauth_return"
    // Lax, not Strict: the provider's redirect back is a cross-site navigation, which Strict would strip
    const cookie = (value: string, maxAge: number): SetCookie => [returnCookie, value, {
      path: "/",
      httpOnly: true,
      secure,
      sameSite: "lax",
      maxAge
    }]
    const failed = (e: { readonly message: string }) => Effect.succeed(page(400, "Connection not completed", e.message))
    yield* router.add("GET", "/oauth/connections/start", (request) => {
      const query = new URL(request.url, "http://x").searchParams
      const state = query.get("state") ?? ""
      const back = consoleReturnPath(query.get("return_to"))
      return authorizations.start(state).pipe(
        Effect.map((location) =>
          withCookies(
            HttpServerResponse.redirect(location, { status: 302, headers: { "cache-control": "no-store" } }),
            back === undefined ? [] : [cookie(`${stateTag(state)}.${encodeURIComponent(back)}`, 30 * 60)]
          )
        ),
        Effect.catchTag("AuthorizationFailed", failed),
        Effect.orDie
      )
    })
    yield* router.add("GET", "/oauth/connections/callback", (request: HttpServerRequest.HttpServerRequest) => {
      const params = Object.fromEntries(new URL(request.url, "http://x").searchParams)
      const [tag, stored] = (request.cookies[returnCookie] ?? "").split(".", 2)
      const back = params.state !== undefined && tag === stateTag(params.state) && stored !== undefined
        ? consoleReturnPath(decoded(stored))
        : undefined
      const clear = back === undefined ? [] : [cookie("", 0)]
      return authorizations.complete(params).pipe(
        Effect.map(({ connectionName }) =>
          back !== undefined
            ? seeOther(`${back}${back.includes("?") ? "&" : "?"}oauth=connected`, clear)
            : page(200, "Connected", `The connection “${connectionName}” is ready. You can close this window.`)
        ),
        Effect.catchTag(
          "AuthorizationFailed",
          (e) => Effect.succeed(withCookies(page(400, "Connection not completed", e.message, back), clear))
        ),
        Effect.orDie
      )
    })
  })
).pipe(Layer.provide(ConnectorsLive))
