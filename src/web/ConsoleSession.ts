import type { HttpServerRequest } from "@effect/platform"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { Unauthenticated } from "../../schema/Errors.js"
import type { Role } from "../../schema/Identity.js"
import type { AgentId, OrganizationId, UserId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { agentsForPerson, groupAgentsOf } from "../access/GroupAgents.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { consoleKeyId } from "../identity/ConsoleKeyId.js"
import { hashOf, sameSecret } from "../oauth/Secrets.js"

/** One organization the session's user belongs to, with their role there. */
export interface ConsoleMembership {
  readonly user_id: UserId
  readonly email: string
  readonly name: string | null
  readonly organization_id: OrganizationId
  readonly organization_name: string
  readonly role: Role
  readonly group_agents: ReadonlyArray<AgentId> | null
}

export interface LiveSession {
  readonly token: string
  readonly chosen: ConsoleMembership
  readonly all: ReadonlyArray<ConsoleMembership>
}

export const CSRF_HEADER = "x-csrf-token"
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

/**
 * The web console's session (a row of `web_sessions`, as the sign-in pages open, under its own cookie).
 * The REST API accepts it in place of an API key: the session's user, in the organization the console chose,
 * with their role there, exactly as their personal key would. The cookie is SameSite=Strict and, on https,
 * `__Host-`; every unsafe method also needs `x-csrf-token`, derived from the session secret, which only a
 * page of this origin can read (from `GET /console/api/session`).
 */
export class ConsoleSession extends Effect.Service<ConsoleSession>()("web/ConsoleSession", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* SwitchyardConfig
    const secure = config.baseUrl.startsWith("https://")
    const names = secure
      ? { session: "__Host-sy_console", organization: "__Host-sy_console_org" }
      : { session: "sy_console", organization: "sy_console_org" }

    const memberships = (token: string) =>
      sql<ConsoleMembership>`
        SELECT u.id AS user_id, u.email, u.name, o.id AS organization_id, o.name AS organization_name, m.role,
               ${groupAgentsOf(sql, sql`m.organization_id`, sql`m.user_id`)} AS group_agents
        FROM web_sessions s JOIN users u ON u.id = s.user_id
        JOIN memberships m ON m.user_id = s.user_id JOIN organizations o ON o.id = m.organization_id
        WHERE s.id_hash = ${hashOf(token)} AND s.expires_at > now()
          -- a session opened through an organization's single sign-on acts in that organization only
          AND (s.organization_id IS NULL OR s.organization_id = m.organization_id)
        ORDER BY o.name, o.id`.pipe(Effect.orDie)

    /** The CSRF token of a session: anyone who can read it is a page of this origin holding the session. */
    const csrfOf = (token: string) =>
      Crypto.createHmac("sha256", token).update("switchyard console csrf").digest("base64url")

    /** The chosen membership (by organization id), else the first; undefined without a live session. */
    const open = (token: string | undefined, organizationId: string | undefined) =>
      Effect.gen(function*() {
        if (token === undefined || token === "") return undefined
        const all = yield* memberships(token)
        if (all.length === 0) return undefined
        const chosen = all.find((m) => m.organization_id === organizationId) ?? all[0]!
        return { token, chosen, all } satisfies LiveSession as LiveSession
      })

    const current = (request: HttpServerRequest.HttpServerRequest) =>
      open(request.cookies[names.session], request.cookies[names.organization])

    /** Whether a browser sent this from a page of this node (`Origin` is sent with every cross-site POST). */
    const sameOrigin = (request: HttpServerRequest.HttpServerRequest) => {
      const origin = request.headers["origin"]
      if (origin === undefined) return true
      try {
        return new URL(origin).host === request.headers["host"]
      } catch {
        return false
      }
    }

    /** For the REST API's authentication: the session's principal, or undefined when no session cookie came. */
    const authenticate = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        if (request.cookies[names.session] === undefined) return undefined
        const session = yield* current(request)
        if (session === undefined) {
          return yield* Unauthenticated.of(
            "Your console session has ended. Sign in again at /console.",
            "invalid_session"
          )
        }
        if (!SAFE_METHODS.has(request.method.toUpperCase())) {
          const sent = request.headers[CSRF_HEADER]
          if (!sameOrigin(request) || sent === undefined || !sameSecret(sent, csrfOf(session.token))) {
            return yield* Unauthenticated.of(
              `A console request that changes something must come from the console (with the ${CSRF_HEADER} header).`,
              "csrf_token_invalid"
            )
          }
        }
        const m = session.chosen
        const principal: Principal = {
          organizationId: m.organization_id,
          userId: m.user_id,
          keyId: consoleKeyId(m.user_id),
          role: m.role,
          agentIds: agentsForPerson(m.role, m.group_agents)
        }
        return principal
      })

    return { names, secure, open, current, csrfOf, sameOrigin, authenticate } as const
  })
}) {}
