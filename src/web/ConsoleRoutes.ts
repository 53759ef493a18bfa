import { HttpLayerRouter, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, FiberRef, Layer } from "effect"
import { AuditLog } from "../audit/AuditLog.js"
import { errorEnvelope, OWN_ERROR_HEADER } from "../http/ErrorEnvelope.js"
import { CurrentRequest } from "../http/RequestContext.js"
import { RouteTable } from "../http/RouteTable.js"
import { OAuthRepo } from "../oauth/OAuthRepo.js"
import { oauthSettings } from "../oauth/Resources.js"
import { hashOf, randomSecret } from "../oauth/Secrets.js"
import { RateLimits } from "../security/RateLimits.js"
import { CONSOLE_SSO_REQUEST, ssoCookieName } from "../sso/SsoPaths.js"
import { SsoSignIn } from "../sso/SsoSignIn.js"
import { assetResponse, loadConsoleAssets } from "./ConsoleAssets.js"
import { ConsoleSession, type LiveSession } from "./ConsoleSession.js"
import { type SetCookie, withCookies } from "./Html.js"
import { checkPassword, recordLock } from "./PasswordSignIn.js"

const SESSION_HOURS = 12

const fail = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  Effect.map(
    FiberRef.get(CurrentRequest),
    (info) =>
      HttpServerResponse.unsafeJson(errorEnvelope({ code, message }, info?.requestId ?? ""), {
        status,
        headers: { ...OWN_ERROR_HEADER, "cache-control": "no-store", ...headers }
      })
  )

/**
 * The web console at `/console` (every node serves it): the built single-page app from `console/dist`, and
 * its sign-in under `/console/api/` (password, the same accounts, checks and rate limits as the sign-in
 * page). Everything else the console does goes through the public REST API with the session cookie.
 */
export const ConsoleRoutes = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* HttpLayerRouter.HttpRouter
    const routes = yield* RouteTable
    const sessions = yield* ConsoleSession
    const repo = yield* OAuthRepo
    const limits = yield* RateLimits
    const audit = yield* AuditLog
    const sso = yield* SsoSignIn
    // the callback is the sign-in pages', on the app's origin: its cookie is named as they name it
    const ssoSecure = (yield* oauthSettings).appUrl.startsWith("https://")
    const assets = loadConsoleAssets()
    const { names, secure } = sessions

    routes.add("GET", /^\/console(\/.*)?$/)
    const POSTED = /^\/console\/api\/(sign-in|sso|sign-out|organization)\/?$/
    routes.add("POST", POSTED)

    const cookie = (name: string, value: string, maxAge: Duration.DurationInput): SetCookie => [name, value, {
      path: "/",
      httpOnly: true,
      secure,
      sameSite: "strict",
      maxAge
    }]

    const json = (body: unknown, cookies: ReadonlyArray<SetCookie> = []) =>
      withCookies(HttpServerResponse.unsafeJson(body, { headers: { "cache-control": "no-store" } }), cookies)

    const describe = ({ all, chosen, token }: LiveSession) => ({
      user: { id: chosen.user_id, email: chosen.email, name: chosen.name },
      organization: { id: chosen.organization_id, name: chosen.organization_name },
      role: chosen.role,
      organizations: all.map((m) => ({ id: m.organization_id, name: m.organization_name, role: m.role })),
      csrf_token: sessions.csrfOf(token)
    })

    const signedOut = () => fail(401, "invalid_session", "Sign in to use the console.")

    yield* router.add("GET", "/console/api/session", (request) =>
      Effect.gen(function*() {
        const session = yield* sessions.current(request)
        return session === undefined ? yield* signedOut() : json(describe(session))
      }))

    /** JSON only: a cross-site form cannot send it without a CORS preflight, which this origin never allows. */
    const jsonBody = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        if (!/^application\/json\b/i.test(request.headers["content-type"] ?? "") || !sessions.sameOrigin(request)) {
          return undefined
        }
        const parsed = yield* Effect.either(request.json)
        return parsed._tag === "Right" && typeof parsed.right === "object" && parsed.right !== null
          ? parsed.right as Record<string, unknown>
          : undefined
      })

    yield* router.add("POST", "/console/api/sign-in", (request) =>
      Effect.gen(function*() {
        const body = yield* jsonBody(request)
        if (body === undefined) return yield* fail(400, "bad_request", "Send {\"email\",\"password\"} as JSON.")
        const email = typeof body.email === "string" ? body.email.trim() : ""
        const password = typeof body.password === "string" ? body.password : ""
        if (email === "" || password === "") return yield* fail(400, "bad_request", "Enter your e-mail and password.")
        // counted before the password is checked, so that parallel guesses cannot all pass one check
        const refused = yield* limits.signInAttempt(email)
        if (refused !== undefined) {
          yield* recordLock(repo, audit, limits, email, refused)
          return yield* fail(429, "rate_limited", refused.message, { "retry-after": String(refused.retryAfter) })
        }
        const userId = yield* checkPassword(repo, audit, email, password, "console")
        if (userId === undefined) return yield* fail(401, "invalid_credentials", "Wrong e-mail or password.")
        yield* limits.signedIn(email)
        const token = randomSecret()
        yield* repo.insertWebSession(hashOf(token), userId, new Date(Date.now() + SESSION_HOURS * 3600_000))
        const session = yield* sessions.open(token, undefined)
        if (session === undefined) {
          yield* repo.deleteWebSession(hashOf(token))
          return yield* fail(403, "forbidden", "This account belongs to no organization.")
        }
        return json(describe(session), [cookie(names.session, token, Duration.hours(SESSION_HOURS))])
      }))

    /**
     * Single sign-on, as on the sign-in page: the organization whose provider admits the e-mail's domain (or the
     * one chosen among several), then the provider; its callback opens a console session and comes back to
     * `/console`. The answer says where to send the browser, or which organizations to choose from.
     */
    yield* router.add("POST", "/console/api/sso", (request) =>
      Effect.gen(function*() {
        const body = yield* jsonBody(request)
        if (body === undefined) return yield* fail(400, "bad_request", "Send {\"email\"} as JSON.")
        const email = typeof body.email === "string" ? body.email.trim() : ""
        const organizationId = typeof body.organization_id === "string" ? body.organization_id : undefined
        const started = yield* sso.start(email, CONSOLE_SSO_REQUEST, organizationId)
        switch (started._tag) {
          case "Notice":
            return yield* fail(400, "bad_request", started.message)
          case "Limited":
            return yield* fail(429, "rate_limited", started.message, { "retry-after": String(started.retryAfter) })
          case "Choose":
            return json({ organizations: started.organizations })
          case "Redirect":
            // lax, not strict: the provider's redirect back is a cross-site navigation that must carry it
            return json({ location: started.location }, [[ssoCookieName(ssoSecure), started.browserToken, {
              path: "/",
              httpOnly: true,
              secure: ssoSecure,
              sameSite: "lax",
              maxAge: Duration.minutes(10)
            }]])
        }
      }))

    /** Sign-out and the organization switch change the session: the same CSRF rule as the REST API. */
    const withSession = (request: HttpServerRequest.HttpServerRequest) =>
      sessions.authenticate(request).pipe(
        Effect.flatMap((principal) =>
          principal === undefined ? Effect.fail("none" as const) : Effect.succeed(principal)
        ),
        Effect.either
      )

    yield* router.add("POST", "/console/api/sign-out", (request) =>
      Effect.gen(function*() {
        const checked = yield* withSession(request)
        if (checked._tag === "Left") {
          return checked.left === "none"
            ? yield* signedOut()
            : yield* fail(401, checked.left.code, checked.left.message)
        }
        yield* repo.deleteWebSession(hashOf(request.cookies[names.session]!))
        return json({ signed_out: true }, [cookie(names.session, "", 0), cookie(names.organization, "", 0)])
      }))

    yield* router.add("POST", "/console/api/organization", (request) =>
      Effect.gen(function*() {
        const checked = yield* withSession(request)
        if (checked._tag === "Left") {
          return checked.left === "none"
            ? yield* signedOut()
            : yield* fail(401, checked.left.code, checked.left.message)
        }
        const body = yield* jsonBody(request)
        const session = yield* sessions.current(request)
        const chosen = session?.all.find((m) => m.organization_id === body?.organization_id)
        if (session === undefined || chosen === undefined) {
          return yield* fail(400, "bad_request", "Choose one of your organizations.")
        }
        return json(describe({ ...session, chosen }), [
          cookie(names.organization, chosen.organization_id, Duration.hours(SESSION_HOURS))
        ])
      }))

    const serve = (request: HttpServerRequest.HttpServerRequest) => {
      const path = new URL(request.url, "http://x").pathname.replace(/^\/console\/?/, "")
      if (assets === undefined) {
        return fail(
          503,
          "unavailable",
          "The console is not built on this node: run `npm run build:console` (npm install runs it)."
        )
      }
      const asset = assets.get(path)
      if (asset !== undefined && path !== "index.html") {
        return Effect.succeed(assetResponse(asset, request.headers["accept-encoding"]))
      }
      if (path.startsWith("api/")) {
        const at = `/console/${path}`
        return POSTED.test(at)
          ? fail(405, "method_not_allowed", `GET is not allowed on ${at}; use POST.`, { allow: "POST" })
          : fail(404, "route_not_found", `No route GET ${at}: the console's API is under /console/api/.`)
      }
      if (path.startsWith("assets/")) return fail(404, "not_found", "Not found.")
      // every other path is a page of the app: it reads the path itself
      return Effect.succeed(assetResponse(assets.get("index.html")!, request.headers["accept-encoding"]))
    }
    yield* router.add("GET", "/console", serve)
    yield* router.add("GET", "/console/*", serve)
  })
).pipe(
  Layer.provide([ConsoleSession.Default, OAuthRepo.Default, RateLimits.Default, AuditLog.Default, SsoSignIn.Default])
)
