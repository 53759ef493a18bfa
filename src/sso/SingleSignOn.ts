import { Effect, Redacted } from "effect"
import { BadRequest, NotFound, Unprocessable } from "../../schema/Errors.js"
import type { OrganizationId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { type PutSsoSettings, SsoSettings } from "../../schema/Sso.js"
import { checkRoleChange } from "../access/RolePolicy.js"
import { canonicalJson } from "../audit/AuditChain.js"
import { AuditLog } from "../audit/AuditLog.js"
import { requireOrganizationKey } from "../identity/IdentityPolicy.js"
import { IdentityRepo } from "../identity/IdentityRepo.js"
import { OAuthRepo } from "../oauth/OAuthRepo.js"
import { sameList } from "../support/Lists.js"
import { IdentityProviders } from "./IdentityProviders.js"
import { ssoRedirectUri } from "./SsoPaths.js"
import { SsoRepo, type SsoRow } from "./SsoRepo.js"

/**
 * An organization's OIDC settings: Admin and above read and change them; every change is audited. Turning
 * single sign-on off, removing it or changing its provider (issuer or client) ends the web sessions it opened
 * and revokes the MCP authorizations given in them (password sessions and theirs go on).
 */
export class SingleSignOn extends Effect.Service<SingleSignOn>()("sso/SingleSignOn", {
  effect: Effect.gen(function*() {
    const repo = yield* SsoRepo
    const providers = yield* IdentityProviders
    const audit = yield* AuditLog
    const identity = yield* IdentityRepo
    const oauth = yield* OAuthRepo
    const redirectUri = yield* ssoRedirectUri
    // the redirect URI is needed before the settings: the provider's client is registered with it first
    const notConfigured = new NotFound({
      code: "not_found",
      message: `Single sign-on settings not found. Register a client at your identity provider with the redirect ` +
        `URI ${redirectUri}, then PUT /v1/sso.`,
      details: { redirect_uri: redirectUri }
    })

    const toSettings = (row: SsoRow) =>
      new SsoSettings({
        issuer: row.issuer,
        client_id: row.client_id,
        client_secret_set: row.client_secret.length > 0,
        allowed_email_domains: row.allowed_email_domains,
        group_claim: row.group_claim,
        group_mapping: row.group_mapping,
        enabled: row.enabled,
        redirect_uri: redirectUri,
        created_at: row.created_at,
        updated_at: row.updated_at
      })

    const NOTHING_ENDED = { sessions: 0, grants: [] as ReadonlyArray<string> }

    /** The sign-ins through the organization's provider end: its web sessions, and what was authorized in them. */
    const signInsEnd = (organizationId: OrganizationId) =>
      Effect.all({
        sessions: repo.endSessions(organizationId),
        grants: Effect.map(oauth.endSignInGrants({ sso: organizationId }), (grants) => grants.map((g) => g.id))
      })

    const get = Effect.fn("SingleSignOn.get")(function*(principal: Principal) {
      yield* requireOrganizationKey(principal, Policy.manageSingleSignOn)
      const row = yield* repo.find(principal.organizationId)
      if (row === undefined) return yield* notConfigured
      return toSettings(row)
    })

    /** Mapped groups must be this organization's, with a default role the caller could grant. */
    const checkMapping = (principal: Principal, input: PutSsoSettings) =>
      Effect.gen(function*() {
        const ids = Array.from(new Set(input.group_mapping.map((m) => m.group_id)))
        const found = yield* repo.existingGroups(principal.organizationId, ids)
        const unknown = ids.filter((id) => !found.some((g) => g.id === id))
        if (unknown.length > 0) {
          return yield* BadRequest.of(
            `\`group_mapping\`: no group ${unknown.map((id) => `'${id}'`).join(", ")} in this organization.`,
            { unknown_group_ids: unknown },
            "unknown_group"
          )
        }
        // signing in through a mapped group grants its default role: no more than the caller could grant
        for (const group of found) {
          if (group.default_role !== null) yield* checkRoleChange(principal, undefined, group.default_role)
        }
      })

    const put = Effect.fn("SingleSignOn.put")(function*(principal: Principal, input: PutSsoSettings) {
      yield* requireOrganizationKey(principal, Policy.manageSingleSignOn)
      const current = yield* repo.find(principal.organizationId)
      if (input.client_secret === undefined && current === undefined) {
        return yield* BadRequest.of(
          "`client_secret`: required when single sign-on is first set up.",
          { issues: [{ path: "client_secret", message: "is missing" }] },
          "validation_failed"
        )
      }
      yield* checkMapping(principal, input)
      const secret = input.client_secret === undefined
        ? providers.openSecret(current!)
        : Redacted.value(input.client_secret)
      // a provider we cannot reach or that is not OIDC would leave every sign-in broken: refuse it now
      yield* providers.discover(input.issuer, input.client_id, secret).pipe(
        Effect.mapError((problem) =>
          Unprocessable.of(
            problem.message,
            problem.kind === "unreachable" ? "sso_issuer_unreachable" : "sso_issuer_not_oidc",
            { issuer: input.issuer }
          )
        )
      )
      const domains = Array.from(new Set(input.allowed_email_domains))
      const result = yield* Effect.gen(function*() {
        // read again, the organization locked until the write: a PUT at once applies after this one
        yield* identity.lockOrganization(principal.organizationId)
        const held = yield* repo.find(principal.organizationId)
        // a secret that no longer opens (SWITCHYARD_SECRET_KEY changed) counts as different: a PUT replaces it
        const secretChanged = input.client_secret !== undefined &&
          (held === undefined ||
            (yield* Effect.orElseSucceed(Effect.try(() => providers.openSecret(held)), () => null)) !== secret)
        if (
          held !== undefined && held.issuer === input.issuer && held.client_id === input.client_id && !secretChanged &&
          sameList(held.allowed_email_domains, domains) && held.group_claim === input.group_claim &&
          canonicalJson(held.group_mapping) === canonicalJson(input.group_mapping) && held.enabled === input.enabled
        ) {
          // what it holds already: not written (`updated_at` stays), nothing audited
          return { row: held, changed: false, secretChanged, ended: NOTHING_ENDED }
        }
        const kept = held ?? current!
        const sealed = input.client_secret === undefined
          ? { sealed: kept.client_secret, keyVersion: kept.secret_key_version }
          : providers.sealSecret(principal.organizationId, secret)
        const row = yield* repo.upsert(principal.organizationId, {
          issuer: input.issuer,
          client_id: input.client_id,
          client_secret: sealed.sealed,
          secret_key_version: sealed.keyVersion,
          allowed_email_domains: domains,
          group_claim: input.group_claim,
          group_mapping: input.group_mapping,
          enabled: input.enabled
        })
        // turned off, or another provider (or another client of it): what the old one vouched for ends with it
        // (as a removal does), in the same transaction
        const ended = input.enabled &&
            (held === undefined || (held.issuer === input.issuer && held.client_id === input.client_id))
          ? NOTHING_ENDED
          : yield* signInsEnd(principal.organizationId)
        return { row, changed: true, secretChanged, ended }
      }).pipe(
        audit.recorded(principal, ({ changed, ended, row, secretChanged }) =>
          changed
            ? {
              action: "UPDATE_SSO_SETTINGS",
              targets: [{ type: "sso_settings", id: principal.organizationId, name: input.issuer }],
              // never the secret: only whether it changed (the one held sent again is no change)
              details: {
                created: "inserted" in row && row.inserted,
                issuer: input.issuer,
                client_id: input.client_id,
                client_secret_changed: secretChanged,
                allowed_email_domains: domains,
                group_claim: input.group_claim,
                group_mapping: input.group_mapping,
                enabled: input.enabled,
                sessions_ended: ended.sessions,
                revoked_authorizations: ended.grants
              }
            }
            : undefined)
      )
      if (result.changed) yield* providers.forget(principal.organizationId)
      return { settings: toSettings(result.row), revokedGrants: result.ended.grants }
    })

    const remove = Effect.fn("SingleSignOn.remove")(function*(principal: Principal) {
      yield* requireOrganizationKey(principal, Policy.manageSingleSignOn)
      const ended = yield* repo.remove(principal.organizationId).pipe(
        Effect.flatMap((removed) => removed ? signInsEnd(principal.organizationId) : Effect.succeed(undefined)),
        audit.recorded(principal, (ended) =>
          ended !== undefined
            ? {
              action: "DELETE_SSO_SETTINGS",
              targets: [{ type: "sso_settings", id: principal.organizationId }],
              details: { sessions_ended: ended.sessions, revoked_authorizations: ended.grants }
            }
            : undefined)
      )
      if (ended === undefined) return yield* notConfigured
      yield* providers.forget(principal.organizationId)
      return { revokedGrants: ended.grants }
    })

    return { get, put, remove } as const
  }).pipe(Effect.annotateLogs("area", "sso")),
  dependencies: [SsoRepo.Default, IdentityProviders.Default, IdentityRepo.Default, AuditLog.Default, OAuthRepo.Default]
}) {}
