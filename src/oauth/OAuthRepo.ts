import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { Role } from "../../schema/Identity.js"
import type { AgentId, OrganizationId, UserId } from "../../schema/Ids.js"
import { groupAgentsOf } from "../access/GroupAgents.js"

export interface ClientRow {
  readonly id: string
  readonly kind: "registered" | "metadata_document"
  readonly name: string | null
  readonly client_uri: string | null
  readonly redirect_uris: ReadonlyArray<string>
  readonly auth_method: "none" | "client_secret_basic" | "client_secret_post"
  readonly secret_hash: Uint8Array | null
  readonly scope: string | null
  readonly created_at: Date
  readonly fetched_at: Date | null
}

/** How the person who approved a client had signed in (null: approved before this was kept). */
export type SignInKind = "password" | "sso"

export interface CodeRow {
  readonly client_id: string
  readonly organization_id: OrganizationId
  readonly user_id: UserId
  readonly redirect_uri: string
  readonly code_challenge: string
  readonly resource: string
  readonly scope: string
  readonly expires_at: Date
  readonly grant_id: string | null
  readonly sign_in: SignInKind | null
}

export interface GrantRow {
  readonly id: string
  readonly client_id: string
  readonly client_name: string | null
  readonly organization_id: OrganizationId
  readonly user_id: UserId
  readonly resource: string
  readonly scope: string
  readonly created_at: Date
  readonly last_used_at: Date | null
  readonly revoked_at: Date | null
}

/** What an access token stands for, as verified: the grant, and its user's current membership. */
export interface AccessRow {
  readonly grant_id: string
  readonly client_id: string
  readonly organization_id: OrganizationId
  readonly user_id: UserId
  readonly email: string
  readonly resource: string
  readonly scope: string
  readonly expires_at: Date
  readonly revoked_at: Date | null
  readonly role: Role | null
  /** The default agents of the user's groups (null: none named). */
  readonly group_agents: ReadonlyArray<AgentId> | null
}

export interface SessionRow {
  readonly organization_id: OrganizationId
  readonly user_id: UserId
  readonly resource: string
  readonly protocol_version: string
  readonly ended_at: Date | null
}

/**
 * Storage of the authorization server and MCP sessions. Secrets arrive here already hashed. A failed statement is
 * a defect (but see `findAccess`).
 */
export class OAuthRepo extends Effect.Service<OAuthRepo>()("oauth/OAuthRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const first = <A>(rows: ReadonlyArray<A>) => rows[0]

    const insertClient = (c: Omit<ClientRow, "created_at" | "fetched_at">) =>
      sql<ClientRow>`
        INSERT INTO oauth_clients (id, kind, name, client_uri, redirect_uris, auth_method, secret_hash, scope, fetched_at)
        VALUES (${c.id}, ${c.kind}, ${c.name}, ${c.client_uri}, ${JSON.stringify(c.redirect_uris)}::jsonb,
                ${c.auth_method}, ${c.secret_hash}, ${c.scope}, ${c.kind === "metadata_document" ? sql`now()` : null})
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, client_uri = excluded.client_uri,
          redirect_uris = excluded.redirect_uris, scope = excluded.scope, fetched_at = excluded.fetched_at
          WHERE oauth_clients.kind = 'metadata_document'
        RETURNING *`.pipe(Effect.map(first), Effect.orDie)

    const findClient = (id: string) =>
      sql<ClientRow>`SELECT * FROM oauth_clients WHERE id = ${id}`.pipe(Effect.map(first), Effect.orDie)

    const findPassword = (email: string) =>
      sql<{ user_id: UserId; email: string; hash: string }>`
        SELECT u.id AS user_id, u.email, p.hash FROM users u JOIN user_passwords p ON p.user_id = u.id
        WHERE lower(u.email) = lower(${email})`.pipe(Effect.map(first), Effect.orDie)

    /** `false` when no user has this e-mail. */
    const setPassword = (email: string, hash: string) =>
      sql`
        INSERT INTO user_passwords (user_id, hash)
        SELECT id, ${hash} FROM users WHERE lower(email) = lower(${email})
        ON CONFLICT (user_id) DO UPDATE SET hash = excluded.hash, updated_at = now()
        RETURNING user_id`.pipe(Effect.map(([row]) => row?.user_id as UserId | undefined), Effect.orDie)

    const insertWebSession = (hash: Uint8Array, userId: UserId, expires: Date) =>
      sql`INSERT INTO web_sessions (id_hash, user_id, expires_at) VALUES (${hash}, ${userId}, ${expires})`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    const findWebSession = (hash: Uint8Array) =>
      sql<{ user_id: UserId; email: string; name: string | null }>`
        SELECT u.id AS user_id, u.email, u.name FROM web_sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id_hash = ${hash} AND s.expires_at > now()`.pipe(Effect.map(first), Effect.orDie)

    const deleteWebSession = (hash: Uint8Array) =>
      sql`DELETE FROM web_sessions WHERE id_hash = ${hash}`.pipe(Effect.asVoid, Effect.orDie)

    /** Ends the user's sessions signed in with a password (those of single sign-on have no password); how many. */
    const endPasswordSessions = (userId: UserId) =>
      sql`DELETE FROM web_sessions WHERE user_id = ${userId} AND organization_id IS NULL RETURNING user_id`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie
      )

    const organizationsOf = (userId: UserId) =>
      sql<{ id: OrganizationId; name: string; role: Role }>`
        SELECT o.id, o.name, m.role FROM memberships m JOIN organizations o ON o.id = m.organization_id
        WHERE m.user_id = ${userId} ORDER BY o.name, o.id`.pipe(Effect.orDie)

    /**
     * A code approved in a web session, only while that session lasts (false: it ended), marked with how its
     * person signed in. The session is share-locked: a sign-in ending either waits for this code, and ends it,
     * or is seen here.
     */
    const insertCode = (hash: Uint8Array, sessionHash: Uint8Array, c: Omit<CodeRow, "grant_id" | "sign_in">) =>
      sql`
        INSERT INTO oauth_codes (code_hash, client_id, organization_id, user_id, redirect_uri, code_challenge,
                                 resource, scope, expires_at, sign_in)
        SELECT ${hash}, ${c.client_id}, ${c.organization_id}, ${c.user_id}, ${c.redirect_uri}, ${c.code_challenge},
               ${c.resource}, ${c.scope}, ${c.expires_at},
               CASE WHEN organization_id IS NULL THEN 'password' ELSE 'sso' END
        FROM web_sessions WHERE id_hash = ${sessionHash} AND user_id = ${c.user_id} AND expires_at > now()
        FOR SHARE
        RETURNING 1`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    /**
     * In the exchange's transaction, before its grant: whether the code still stands (a sign-in that ended
     * since deleted it). Locked, so such an ending waits for the grant and then revokes it.
     */
    const lockCode = (hash: Uint8Array) =>
      sql`SELECT 1 FROM oauth_codes WHERE code_hash = ${hash} FOR UPDATE`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.orDie
      )

    /** The code on its first use only; `replayed` when it was used before (its grant is then revoked). */
    const consumeCode = (hash: Uint8Array) =>
      Effect.gen(function*() {
        const fresh = yield* sql<CodeRow>`
          UPDATE oauth_codes SET used_at = now() WHERE code_hash = ${hash} AND used_at IS NULL RETURNING *`
        if (fresh[0] !== undefined) return { code: fresh[0], replayed: false } as const
        const used = yield* sql<CodeRow>`SELECT * FROM oauth_codes WHERE code_hash = ${hash}`
        return { code: used[0], replayed: used[0] !== undefined } as const
      }).pipe(Effect.orDie)

    const attachGrant = (hash: Uint8Array, grantId: string) =>
      sql`UPDATE oauth_codes SET grant_id = ${grantId} WHERE code_hash = ${hash}`.pipe(Effect.asVoid, Effect.orDie)

    const insertGrant = (
      g: Omit<GrantRow, "created_at" | "last_used_at" | "revoked_at" | "client_name">,
      signIn: SignInKind | null
    ) =>
      sql`
        INSERT INTO oauth_grants (id, client_id, organization_id, user_id, resource, scope, sign_in)
        VALUES (${g.id}, ${g.client_id}, ${g.organization_id}, ${g.user_id}, ${g.resource}, ${g.scope},
                ${signIn})`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    const grantColumns = sql`g.*, c.name AS client_name`

    const findGrant = (id: string) =>
      sql<GrantRow>`
        SELECT ${grantColumns} FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client_id
        WHERE g.id = ${id}`.pipe(Effect.map(first), Effect.orDie)

    const listGrants = (organizationId: OrganizationId, userId: UserId) =>
      sql<GrantRow>`
        SELECT ${grantColumns} FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client_id
        WHERE g.organization_id = ${organizationId} AND g.user_id = ${userId}
        ORDER BY g.created_at DESC, g.id`.pipe(Effect.orDie)

    const revokeGrant = (id: string) =>
      sql`UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id}`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    /** A member's live grants in one organization, revoked when they leave it; their ids. */
    const revokeGrantsOf = (organizationId: OrganizationId, userId: UserId) =>
      sql<{ id: string }>`
        UPDATE oauth_grants SET revoked_at = now()
        WHERE organization_id = ${organizationId} AND user_id = ${userId} AND revoked_at IS NULL RETURNING id`.pipe(
        Effect.map((rows) => rows.map((r) => r.id)),
        Effect.orDie
      )

    /**
     * Ends what a kind of sign-in authorized (`sso`: in one organization, `password`: one person's, everywhere):
     * codes not yet exchanged are deleted, live grants revoked; those grants. Grants of unknown sign-in (from
     * before it was kept) end with either. Codes first: an exchange holding one is waited for, and its grant
     * is then seen and revoked.
     */
    const endSignInGrants = (ended: { readonly sso: OrganizationId } | { readonly password: UserId }) =>
      Effect.gen(function*() {
        const [kind, other, where] = "sso" in ended
          ? ["sso", "password", sql`organization_id = ${ended.sso}`] as const
          : ["password", "sso", sql`user_id = ${ended.password}`] as const
        yield* sql`
          DELETE FROM oauth_codes WHERE ${where} AND grant_id IS NULL AND (sign_in = ${kind} OR sign_in IS NULL)`
        return yield* sql<{ id: string; organization_id: OrganizationId }>`
          UPDATE oauth_grants SET revoked_at = now()
          WHERE ${where} AND revoked_at IS NULL AND sign_in IS DISTINCT FROM ${other}
          RETURNING id, organization_id`
      }).pipe(Effect.orDie)

    /** `scope`: an access token's, when narrower than its grant's (RFC 6749 section 6); else null. */
    const insertToken = (
      hash: Uint8Array,
      kind: "access" | "refresh",
      grantId: string,
      expires: Date,
      scope: string | null = null
    ) =>
      sql`
        INSERT INTO oauth_tokens (token_hash, kind, grant_id, expires_at, scope)
        VALUES (${hash}, ${kind}, ${grantId}, ${expires}, ${scope})`.pipe(Effect.asVoid, Effect.orDie)

    /** A refresh token as it stands, without using it: `used` when it was rotated out already. */
    const findRefreshToken = (hash: Uint8Array) =>
      sql<{ grant_id: string; expires_at: Date; used: boolean }>`
        SELECT grant_id, expires_at, used_at IS NOT NULL AS used FROM oauth_tokens
        WHERE token_hash = ${hash} AND kind = 'refresh'`.pipe(Effect.map(first), Effect.orDie)

    /** Uses a refresh token once: `false` when it was used already (a concurrent refresh got there first). */
    const consumeRefreshToken = (hash: Uint8Array) =>
      sql`
        UPDATE oauth_tokens SET used_at = now()
        WHERE token_hash = ${hash} AND kind = 'refresh' AND used_at IS NULL RETURNING 1`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.orDie
      )

    const findToken = (hash: Uint8Array) =>
      sql<{ kind: "access" | "refresh"; grant_id: string }>`
        SELECT kind, grant_id FROM oauth_tokens WHERE token_hash = ${hash}`.pipe(Effect.map(first), Effect.orDie)

    const expireToken = (hash: Uint8Array) =>
      sql`UPDATE oauth_tokens SET expires_at = least(expires_at, now()) WHERE token_hash = ${hash}`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    const findAccess = (hash: Uint8Array) =>
      sql<AccessRow>`
        SELECT g.id AS grant_id, g.client_id, g.organization_id, g.user_id, u.email, g.resource,
               coalesce(t.scope, g.scope) AS scope,
               t.expires_at, g.revoked_at, m.role,
               ${groupAgentsOf(sql, sql`g.organization_id`, sql`g.user_id`)} AS group_agents
        FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id
        LEFT JOIN memberships m ON m.organization_id = g.organization_id AND m.user_id = g.user_id
        WHERE t.token_hash = ${hash} AND t.kind = 'access'`.pipe(Effect.map(first), Effect.orDie)

    const touchGrant = (id: string) =>
      sql`UPDATE oauth_grants SET last_used_at = now() WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    const insertSession = (hash: Uint8Array, s: Omit<SessionRow, "ended_at">, clientInfo: unknown) =>
      sql`
        INSERT INTO mcp_sessions (id_hash, organization_id, user_id, resource, protocol_version, client_info)
        VALUES (${hash}, ${s.organization_id}, ${s.user_id}, ${s.resource}, ${s.protocol_version},
                ${clientInfo === undefined ? null : JSON.stringify(clientInfo)}::jsonb)`.pipe(Effect.orDie)

    const findSession = (hash: Uint8Array) =>
      sql<SessionRow>`
        SELECT organization_id, user_id, resource, protocol_version, ended_at FROM mcp_sessions
        WHERE id_hash = ${hash}`.pipe(Effect.map(first), Effect.orDie)

    const endSession = (hash: Uint8Array) =>
      sql`UPDATE mcp_sessions SET ended_at = coalesce(ended_at, now()) WHERE id_hash = ${hash}`.pipe(Effect.orDie)

    const touchSession = (hash: Uint8Array) =>
      sql`UPDATE mcp_sessions SET last_seen_at = now() WHERE id_hash = ${hash}`.pipe(Effect.asVoid, Effect.orDie)

    return {
      insertClient,
      findClient,
      findPassword,
      setPassword,
      insertWebSession,
      findWebSession,
      deleteWebSession,
      endPasswordSessions,
      organizationsOf,
      insertCode,
      lockCode,
      consumeCode,
      attachGrant,
      insertGrant,
      findGrant,
      listGrants,
      revokeGrant,
      revokeGrantsOf,
      endSignInGrants,
      insertToken,
      findRefreshToken,
      consumeRefreshToken,
      findToken,
      expireToken,
      findAccess,
      touchGrant,
      insertSession,
      findSession,
      endSession,
      touchSession
    } as const
  })
}) {}
