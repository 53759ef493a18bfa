import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { ConnectorsLive } from "./ConnectorsLive.js"
import { OAuthAuthorizations } from "./OAuthAuthorizations.js"

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

const page = (status: number, title: string, message: string) =>
  HttpServerResponse.text(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)} · Switchyard</title>` +
      `<meta name="viewport" content="width=device-width,initial-scale=1">` +
      `<style>body{font:16px system-ui,sans-serif;max-width:34rem;margin:4rem auto;padding:0 1rem;color:#222}</style></head>` +
      `<body><h1>${escape(title)}</h1><p>${escape(message)}</p></body></html>`,
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

/** The browser side of connecting an OAuth2 connector: start (redirect to the provider) and callback. */
export const ConnectionOAuthRoutes = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* HttpLayerRouter.HttpRouter
    const authorizations = yield* OAuthAuthorizations
    const failed = (e: { readonly message: string }) => Effect.succeed(page(400, "Connection not completed", e.message))
    yield* router.add("GET", "/oauth/connections/start", (request) => {
      const state = new URL(request.url, "http://x").searchParams.get("state") ?? ""
      return authorizations.start(state).pipe(
        Effect.map((location) =>
          HttpServerResponse.redirect(location, { status: 302, headers: { "cache-control": "no-store" } })
        ),
        Effect.catchTag("AuthorizationFailed", failed),
        Effect.orDie
      )
    })
    yield* router.add("GET", "/oauth/connections/callback", (request: HttpServerRequest.HttpServerRequest) => {
      const params = Object.fromEntries(new URL(request.url, "http://x").searchParams)
      return authorizations.complete(params).pipe(
        Effect.map(({ connectionName }) =>
          page(200, "Connected", `The connection “${connectionName}” is ready. You can close this window.`)
        ),
        Effect.catchTag("AuthorizationFailed", failed),
        Effect.orDie
      )
    })
  })
).pipe(Layer.provide(ConnectorsLive))
