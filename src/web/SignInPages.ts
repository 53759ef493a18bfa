import { HttpLayerRouter, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, Layer } from "effect"
import type { OrganizationId, UserId } from "../../schema/Ids.js"
import { AuditLog } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { inspectFormText } from "../http/JsonBody.js"
import { RouteTable } from "../http/RouteTable.js"
import { AuthorizationServer, type AuthorizeRequest } from "../oauth/AuthorizationServer.js"
import { OAuthLive } from "../oauth/OAuthLive.js"
import { OAuthRepo } from "../oauth/OAuthRepo.js"
import { oauthSettings } from "../oauth/Resources.js"
import { hashOf, randomSecret, sameSecret } from "../oauth/Secrets.js"
import { RateLimits } from "../security/RateLimits.js"
import { CONSOLE_SSO_REQUEST, SSO_CALLBACK_PATH, ssoCookieName } from "../sso/SsoPaths.js"
import { SsoSignIn } from "../sso/SsoSignIn.js"
import { ConsoleSession } from "./ConsoleSession.js"
import { page, seeOther, type SetCookie, withCookies } from "./Html.js"
import { checkPassword, recordLock } from "./PasswordSignIn.js"
import { consentPage, errorPage, signInPage, ssoChoicePage } from "./Views.js"

const PATH = "/oauth_login"
const SESSION_HOURS = 12

/**
 * The sign-in and consent pages of the authorization server (spec 5.2.3 d), at `${APP_URL}/oauth_login`
 * with the authorization request's query string. Plain forms, no JavaScript; every post carries a CSRF
 * token that must match its cookie (and a same-origin `Origin` when the browser sends one).
 */
export const SignInPages = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* HttpLayerRouter.HttpRouter
    const routes = yield* RouteTable
    const config = yield* SwitchyardConfig
    const settings = yield* oauthSettings
    const server = yield* AuthorizationServer
    const repo = yield* OAuthRepo
    const sso = yield* SsoSignIn
    const limits = yield* RateLimits
    const audit = yield* AuditLog

    routes.add("GET", /^\/oauth_login\/?$/)
    routes.add("POST", /^\/oauth_login\/?$/)
    routes.add("GET", /^\/oauth_login\/sso\/callback\/?$/)
    if (!config.signInPages) {
      // a separate UI serves the page: this host answers as spec section 7 describes
      const notFound = Effect.succeed(HttpServerResponse.unsafeJson({ detail: "Not Found" }, { status: 404 }))
      yield* router.add("GET", PATH, notFound)
      yield* router.add("POST", PATH, notFound)
      yield* router.add("GET", SSO_CALLBACK_PATH, notFound)
      return
    }

    // __Host- cookies need Secure, which needs https: plain names on a local http install
    const secure = settings.appUrl.startsWith("https://")
    const names = secure
      ? { session: "__Host-sy_session", csrf: "__Host-sy_csrf", sso: ssoCookieName(true) }
      : { session: "sy_session", csrf: "sy_csrf", sso: ssoCookieName(false) }
    const cookie = (name: string, value: string, maxAge: Duration.DurationInput): SetCookie => [name, value, {
      path: "/",
      httpOnly: true,
      secure,
      sameSite: "lax",
      maxAge
    }]
    const appOrigin = new URL(settings.appUrl).origin
    const { names: consoleNames, secure: consoleSecure } = yield* ConsoleSession
    const consoleCookie = (name: string, value: string, maxAge: Duration.DurationInput): SetCookie => [name, value, {
      path: "/",
      httpOnly: true,
      secure: consoleSecure,
      sameSite: "strict",
      maxAge
    }]

    const currentUser = (request: HttpServerRequest.HttpServerRequest) => {
      const token = request.cookies[names.session]
      return token === undefined ? Effect.succeed(undefined) : repo.findWebSession(hashOf(token))
    }

    /** A session opened through an organization's identity provider acts in that organization only. */
    const organizationsFor = (request: HttpServerRequest.HttpServerRequest, userId: UserId) =>
      Effect.gen(function*() {
        const all = yield* repo.organizationsOf(userId)
        const scope = yield* sso.sessionOrganization(hashOf(request.cookies[names.session]!))
        return scope === null ? all : all.filter((o) => o.id === scope)
      })

    const show = (request: HttpServerRequest.HttpServerRequest, query: string, notice?: string, status = 200) =>
      Effect.gen(function*() {
        const params = new URLSearchParams(query)
        const validated = yield* server.validate(params).pipe(Effect.either)
        if (validated._tag === "Left") {
          return validated.left._tag === "Redirect"
            ? HttpServerResponse.redirect(validated.left.location, { status: 302 })
            : page("Sign-in request not valid", errorPage(validated.left.message), { status: 400 })
        }
        const csrf = request.cookies[names.csrf] ?? randomSecret()
        const cookies = [cookie(names.csrf, csrf, Duration.hours(SESSION_HOURS))]
        const user = yield* currentUser(request)
        if (user === undefined) {
          const offerSso = yield* sso.anyEnabled
          return page("Sign in", signInPage({ query, csrf, notice, client: clientLabel(validated.right), offerSso }), {
            status,
            cookies
          })
        }
        const organizations = yield* organizationsFor(request, user.user_id as UserId)
        return page("Authorize access", consentPage({ query, csrf, request: validated.right, user, organizations }), {
          status,
          cookies
        })
      })

    yield* router.add("GET", PATH, (request) => show(request, new URL(request.url, "http://x").search.slice(1)))

    const refuse = (message: string) => Effect.succeed(page("Request refused", errorPage(message), { status: 403 }))

    yield* router.add("POST", PATH, (request) =>
      Effect.gen(function*() {
        const text = yield* request.text
        // a NUL reaches no query (PostgreSQL refuses it in text): the edge's rule for forms, on this page
        const nul = inspectFormText(text)
        if (nul !== undefined) return page("Request refused", errorPage(nul.message), { status: 400 })
        const form = new URLSearchParams(text)
        const query = form.get("request") ?? ""
        const origin = request.headers["origin"]
        if (origin !== undefined && origin !== appOrigin) {
          return yield* refuse("This form was sent from another site.")
        }
        const expected = request.cookies[names.csrf]
        const sent = form.get("csrf")
        if (expected === undefined || sent === null || !sameSecret(expected, sent)) {
          return yield* refuse("The form expired or was not sent from this page. Go back and try again.")
        }
        const again = `${PATH}?${query}`
        switch (form.get("action")) {
          case "sign_in": {
            const email = form.get("email") ?? ""
            // counted before the password is checked, so that parallel guesses cannot all pass one check
            const refused = yield* limits.signInAttempt(email)
            if (refused !== undefined) {
              yield* recordLock(repo, audit, limits, email, refused)
              return HttpServerResponse.setHeader(
                yield* show(request, query, refused.message, 429),
                "retry-after",
                String(refused.retryAfter)
              )
            }
            const userId = yield* checkPassword(repo, audit, email, form.get("password") ?? "", "authorization")
            if (userId === undefined) {
              return yield* show(request, query, "Wrong e-mail or password.", 401)
            }
            yield* limits.signedIn(email)
            const session = randomSecret()
            yield* repo.insertWebSession(
              hashOf(session),
              userId,
              new Date(Date.now() + SESSION_HOURS * 3600_000)
            )
            // a new CSRF token with the new session: one seen before sign-in is not trusted after it
            return seeOther(again, [
              cookie(names.session, session, Duration.hours(SESSION_HOURS)),
              cookie(names.csrf, randomSecret(), Duration.hours(SESSION_HOURS))
            ])
          }
          case "sign_out": {
            const token = request.cookies[names.session]
            if (token !== undefined) yield* repo.deleteWebSession(hashOf(token))
            return seeOther(again, [cookie(names.session, "", 0)])
          }
          case "approve":
          case "deny": {
            const user = yield* currentUser(request)
            if (user === undefined) return yield* show(request, query, "Sign in first.", 401)
            const validated = yield* server.validate(new URLSearchParams(query)).pipe(Effect.either)
            if (validated._tag === "Left") return yield* show(request, query)
            if (form.get("action") === "deny") return seeOther(server.deny(validated.right))
            const organizations = yield* organizationsFor(request, user.user_id as UserId)
            const chosen = organizations.find((o) => o.id === form.get("organization_id"))
            if (chosen === undefined) return yield* show(request, query, "Choose one of your organizations.", 400)
            const location = yield* server.approve(
              validated.right,
              user.user_id as UserId,
              chosen.id as OrganizationId,
              hashOf(request.cookies[names.session]!)
            )
            // the session ended between the page and this post (signed out elsewhere, its sign-in ended)
            if (location === undefined) return yield* show(request, query, "Your sign-in ended. Sign in again.", 401)
            return seeOther(location)
          }
          case "sso": {
            const email = form.get("email") ?? ""
            const started = yield* sso.start(email, query, form.get("organization_id") ?? undefined)
            switch (started._tag) {
              case "Notice":
                return yield* show(request, query, started.message, 400)
              case "Limited":
                return HttpServerResponse.setHeader(
                  yield* show(request, query, started.message, 429),
                  "retry-after",
                  String(started.retryAfter)
                )
              case "Choose":
                return page(
                  "Choose your organization",
                  ssoChoicePage({ query, csrf: expected, email, organizations: started.organizations })
                )
              case "Redirect":
                // binds the provider's answer to this browser: a callback without this cookie is refused
                return seeOther(started.location, [cookie(names.sso, started.browserToken, Duration.minutes(10))])
            }
          }
          // falls through only for an unknown action
          default:
            return yield* show(request, query, undefined, 400)
        }
      }))

    // the identity provider sends the browser back here; the authorization request continues as after a password
    yield* router.add("GET", SSO_CALLBACK_PATH, (request) =>
      Effect.gen(function*() {
        const params = new URL(request.url, "http://x").searchParams
        const session = randomSecret()
        const finished = yield* sso.finish(params, request.cookies[names.sso]).pipe(
          Effect.tap((signedIn) =>
            sso.openSession(hashOf(session), signedIn, new Date(Date.now() + SESSION_HOURS * 3600_000))
          ),
          Effect.either
        )
        const clearSso = cookie(names.sso, "", 0)
        if (finished._tag === "Left") {
          return withCookies(
            page("Single sign-on refused", errorPage(finished.left.message), { status: finished.left.status }),
            [clearSso]
          )
        }
        if (finished.right.request === CONSOLE_SSO_REQUEST) {
          // a console sign-in: the session under the console's cookie, acting in the provider's organization
          return seeOther("/console", [
            consoleCookie(consoleNames.session, session, Duration.hours(SESSION_HOURS)),
            consoleCookie(consoleNames.organization, finished.right.organizationId, Duration.hours(SESSION_HOURS)),
            clearSso
          ])
        }
        return seeOther(`${PATH}?${finished.right.request}`, [
          cookie(names.session, session, Duration.hours(SESSION_HOURS)),
          cookie(names.csrf, randomSecret(), Duration.hours(SESSION_HOURS)),
          clearSso
        ])
      }))
  })
).pipe(
  Layer.provide(OAuthLive),
  Layer.provide(SsoSignIn.Default),
  Layer.provide([RateLimits.Default, AuditLog.Default, ConsoleSession.Default])
)

export const clientLabel = (request: AuthorizeRequest) => request.client.name ?? request.client.id
