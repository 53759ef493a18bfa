import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { GroupId } from "../../schema/Access.js"
import type { Role } from "../../schema/Identity.js"
import type { OrganizationId, UserId } from "../../schema/Ids.js"
import type { SsoGroupMapping } from "../../schema/Sso.js"

export interface SsoRow {
  readonly organization_id: OrganizationId
  readonly issuer: string
  readonly client_id: string
  readonly client_secret: Uint8Array
  readonly secret_key_version: number
  readonly allowed_email_domains: ReadonlyArray<string>
  readonly group_claim: string
  readonly group_mapping: ReadonlyArray<SsoGroupMapping>
  readonly enabled: boolean
  readonly created_at: Date
  readonly updated_at: Date
}

export type SsoFields = Omit<SsoRow, "organization_id" | "created_at" | "updated_at">

export interface PendingLogin {
  readonly browser_hash: Uint8Array
  readonly organization_id: OrganizationId
  readonly code_verifier: string
  readonly nonce: string
  readonly request: string
  readonly expires_at: Date
}

/**
 * Storage of single sign-on: settings, sign-ins in flight, linked identities, scoped web sessions. A failed
 * statement is a defect.
 */
export class SsoRepo extends Effect.Service<SsoRepo>()("sso/SsoRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const find = (organizationId: OrganizationId) =>
      sql<SsoRow>`SELECT * FROM sso_settings WHERE organization_id = ${organizationId}`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie
      )

    const upsert = (organizationId: OrganizationId, f: SsoFields) =>
      sql<SsoRow & { inserted: boolean }>`
        INSERT INTO sso_settings (organization_id, issuer, client_id, client_secret, secret_key_version,
                                  allowed_email_domains, group_claim, group_mapping, enabled)
        VALUES (${organizationId}, ${f.issuer}, ${f.client_id}, ${f.client_secret}, ${f.secret_key_version},
                ${JSON.stringify(f.allowed_email_domains)}::jsonb, ${f.group_claim},
                ${JSON.stringify(f.group_mapping)}::jsonb, ${f.enabled})
        ON CONFLICT (organization_id) DO UPDATE SET issuer = excluded.issuer, client_id = excluded.client_id,
          client_secret = excluded.client_secret, secret_key_version = excluded.secret_key_version,
          allowed_email_domains = excluded.allowed_email_domains, group_claim = excluded.group_claim,
          group_mapping = excluded.group_mapping, enabled = excluded.enabled, updated_at = now()
        RETURNING *, (xmax = 0) AS inserted`.pipe(Effect.map(([row]) => row!), Effect.orDie)

    const remove = (organizationId: OrganizationId) =>
      sql`DELETE FROM sso_settings WHERE organization_id = ${organizationId} RETURNING organization_id`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.orDie
      )

    /** Enabled settings that admit this e-mail domain, with their organization's name. */
    const forDomain = (domain: string) =>
      sql<SsoRow & { organization_name: string }>`
        SELECT s.*, o.name AS organization_name FROM sso_settings s JOIN organizations o ON o.id = s.organization_id
        WHERE s.enabled AND s.allowed_email_domains ? ${domain} ORDER BY o.name, o.id`.pipe(Effect.orDie)

    const anyEnabled = sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM sso_settings WHERE enabled) AS any`.pipe(
      Effect.map(([row]) => row!.any),
      Effect.orDie
    )

    /** Groups of this organization among `ids`. */
    const existingGroups = (organizationId: OrganizationId, ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([] as ReadonlyArray<{ id: GroupId; name: string; default_role: Role | null }>)
        : sql<{ id: GroupId; name: string; default_role: Role | null }>`
          SELECT id, name, default_role FROM groups
          WHERE organization_id = ${organizationId} AND id::text IN ${sql.in(ids)}`.pipe(Effect.orDie)

    /** The user's groups among `ids`. */
    const memberOf = (organizationId: OrganizationId, userId: UserId, ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed(new Set<string>())
        : sql<{ group_id: string }>`
          SELECT group_id::text AS group_id FROM group_members
          WHERE organization_id = ${organizationId} AND user_id = ${userId} AND group_id::text IN ${sql.in(ids)}`
          .pipe(Effect.map((rows) => new Set(rows.map((r) => r.group_id))), Effect.orDie)

    const insertLogin = (stateHash: Uint8Array, login: PendingLogin) =>
      sql`
        INSERT INTO sso_logins (state_hash, browser_hash, organization_id, code_verifier, nonce, request, expires_at)
        VALUES (${stateHash}, ${login.browser_hash}, ${login.organization_id}, ${login.code_verifier},
                ${login.nonce}, ${login.request}, ${login.expires_at})`.pipe(Effect.asVoid, Effect.orDie)

    /**
     * A sign-in in flight, once: the row is gone after this (a replayed callback finds nothing). Those never
     * completed go with the sweep of expired rows (src/security/ExpiredRows.ts).
     */
    const takeLogin = (stateHash: Uint8Array) =>
      sql<PendingLogin>`DELETE FROM sso_logins WHERE state_hash = ${stateHash} RETURNING *`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie
      )

    /** The user linked to the subject, whose link now names the client it signed in through. */
    const findIdentity = (
      organizationId: OrganizationId,
      provider: Pick<SsoRow, "issuer" | "client_id">,
      subject: string
    ) =>
      sql<{ user_id: UserId }>`
        UPDATE sso_identities SET last_sign_in_at = now(), client_id = ${provider.client_id}
        WHERE organization_id = ${organizationId} AND issuer = ${provider.issuer} AND subject = ${subject}
        RETURNING user_id`.pipe(Effect.map(([row]) => row?.user_id), Effect.orDie)

    const linkIdentity = (
      organizationId: OrganizationId,
      provider: Pick<SsoRow, "issuer" | "client_id">,
      subject: string,
      userId: UserId
    ) =>
      sql`
        INSERT INTO sso_identities (organization_id, issuer, subject, user_id, client_id)
        VALUES (${organizationId}, ${provider.issuer}, ${subject}, ${userId}, ${provider.client_id})
        ON CONFLICT (organization_id, issuer, subject) DO UPDATE SET user_id = excluded.user_id,
          client_id = excluded.client_id, last_sign_in_at = now()`.pipe(Effect.asVoid, Effect.orDie)

    /**
     * Whether the user, a member here, is linked to another subject of this very provider (issuer and client).
     * Links of someone no longer a member (removed before removal forgot them) hold nothing to take over.
     */
    const linkedElsewhere = (
      organizationId: OrganizationId,
      provider: Pick<SsoRow, "issuer" | "client_id">,
      subject: string,
      userId: UserId
    ) =>
      sql<{ any: boolean }>`
        SELECT EXISTS (
          SELECT 1 FROM sso_identities i JOIN memberships m USING (organization_id, user_id)
          WHERE i.organization_id = ${organizationId} AND i.user_id = ${userId} AND i.issuer = ${provider.issuer}
            AND i.client_id = ${provider.client_id} AND i.subject <> ${subject}
        ) AS any`.pipe(Effect.map(([row]) => row!.any), Effect.orDie)

    /** Forgets the user's links to the organization's identity providers (they left it); how many there were. */
    const forgetIdentities = (organizationId: OrganizationId, userId: UserId) =>
      sql`
        DELETE FROM sso_identities WHERE organization_id = ${organizationId} AND user_id = ${userId}
        RETURNING subject`.pipe(Effect.map((rows) => rows.length), Effect.orDie)

    /**
     * A session, only while the organization's single sign-on is on with the provider (issuer and client) that
     * signed the person in (false: it is not). The settings row is share-locked: a change turning it off or to
     * another provider either waits for this session, and ends it, or is seen here.
     */
    const insertSession = (
      hash: Uint8Array,
      userId: UserId,
      provider: Pick<SsoRow, "organization_id" | "issuer" | "client_id">,
      expires: Date
    ) =>
      sql`
        INSERT INTO web_sessions (id_hash, user_id, organization_id, expires_at)
        SELECT ${hash}, ${userId}, organization_id, ${expires} FROM sso_settings
        WHERE organization_id = ${provider.organization_id} AND enabled AND issuer = ${provider.issuer}
          AND client_id = ${provider.client_id} FOR SHARE
        RETURNING user_id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    /** Ends the web sessions opened through the organization's single sign-on; how many there were. */
    const endSessions = (organizationId: OrganizationId) =>
      sql`DELETE FROM web_sessions WHERE organization_id = ${organizationId} RETURNING user_id`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie
      )

    /** The organization a web session is limited to (`null`: a password session, any of the user's). */
    const sessionOrganization = (hash: Uint8Array) =>
      sql<{ organization_id: OrganizationId | null }>`
        SELECT organization_id FROM web_sessions WHERE id_hash = ${hash}`.pipe(
        Effect.map(([row]) => row?.organization_id ?? null),
        Effect.orDie
      )

    return {
      find,
      upsert,
      remove,
      forDomain,
      anyEnabled,
      existingGroups,
      memberOf,
      insertLogin,
      takeLogin,
      findIdentity,
      linkIdentity,
      linkedElsewhere,
      forgetIdentities,
      insertSession,
      endSessions,
      sessionOrganization
    } as const
  })
}) {}
