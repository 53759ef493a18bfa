import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import * as Crypto from "node:crypto"
import { BadRequest, Conflict, Forbidden, NotFound } from "../../schema/Errors.js"
import {
  ApiKey,
  type CreateApiKey,
  CreatedApiKey,
  type CreateMember,
  Me,
  roleDisplayName,
  type UpdateMember
} from "../../schema/Identity.js"
import { ApiKeyId, type OrganizationId, type UserId } from "../../schema/Ids.js"
import { holds, Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { OrganizationAgents } from "../access/OrganizationAgents.js"
import { checkRoleChange, requireRoleAtLeast } from "../access/RolePolicy.js"
import { AuditLog } from "../audit/AuditLog.js"
import { ConnectorRepo } from "../connectors/ConnectorRepo.js"
import { transactionIn } from "../db/Transaction.js"
import { OAuthRepo } from "../oauth/OAuthRepo.js"
import { SsoRepo } from "../sso/SsoRepo.js"
import { listOrPage, type PageParams } from "../support/Cursor.js"
import { generateApiKey } from "./ApiKeySecret.js"
import { consoleKeyId } from "./ConsoleKeyId.js"
import { requireOrganizationKey, requirePermission } from "./IdentityPolicy.js"
import { IdentityRepo, toApiKey, toMember } from "./IdentityRepo.js"

export interface Bootstrapped {
  readonly organization_id: OrganizationId
  readonly user_id: UserId
  readonly api_key: string
}

export class Identity extends Effect.Service<Identity>()("identity/Identity", {
  effect: Effect.gen(function*() {
    const repo = yield* IdentityRepo
    const connectorRepo = yield* ConnectorRepo
    const oauthRepo = yield* OAuthRepo
    const ssoRepo = yield* SsoRepo
    const agents = yield* OrganizationAgents
    const transaction = transactionIn(yield* SqlClient.SqlClient)
    const audit = yield* AuditLog

    const createKey = (
      organizationId: OrganizationId,
      input: Pick<CreateApiKey, "name" | "kind" | "role" | "agent_ids">,
      userId: UserId | null,
      createdBy: UserId | null
    ) =>
      Effect.gen(function*() {
        const secret = generateApiKey()
        const row = yield* repo.insertApiKey({
          id: secret.id,
          organizationId,
          kind: input.kind,
          name: input.name,
          role: input.role ?? "member",
          userId,
          agentIds: input.agent_ids ?? null,
          hash: secret.hash,
          createdBy
        })
        return new CreatedApiKey({ ...toApiKey(row), api_key: secret.key })
      })

    /** A new organization with a Super admin and their personal key. */
    const bootstrap = Effect.fn("Identity.bootstrap")(
      function*(input: { readonly organization: string; readonly email: string }) {
        const organization = yield* repo.insertOrganization(Crypto.randomUUID() as OrganizationId, input.organization)
        const user = yield* repo.upsertUser(Crypto.randomUUID() as UserId, input.email, null)
        yield* repo.insertMembership(organization.id, user.id, "super_admin")
        const key = yield* createKey(
          organization.id,
          { name: "bootstrap", kind: "personal", role: "super_admin", agent_ids: undefined },
          user.id,
          null
        )
        yield* audit.record({
          organizationId: organization.id,
          actor: { type: "system", id: "bootstrap", key_id: null }
        }, {
          action: "CREATE_ORGANIZATION",
          targets: [
            { type: "organization", id: organization.id, name: organization.name },
            { type: "member", id: user.id, name: user.email }
          ],
          details: { role: "super_admin", api_key_id: key.id }
        })
        return { organization_id: organization.id, user_id: user.id, api_key: key.api_key } satisfies Bootstrapped
      },
      transaction
    )

    /** On the first start of an empty database: the default organization. `None` when one exists. */
    const bootstrapIfEmpty = Effect.fn("Identity.bootstrapIfEmpty")(
      function*(input: { readonly organization: string; readonly email: string }) {
        yield* repo.lockBootstrap
        if ((yield* repo.countOrganizations) > 0) return Option.none<Bootstrapped>()
        return Option.some(yield* bootstrap(input))
      },
      transaction
    )

    /**
     * A console session has no API key row: `key` describes the session as the API sees it (its stable key
     * id, the member's role and agents), named "Console session".
     */
    const consoleCaller = (principal: Principal, userId: UserId) =>
      Effect.map(
        repo.findSessionCaller(principal.organizationId, userId),
        (found) =>
          found === undefined ? undefined : {
            organization: found.organization,
            user: found.user,
            key: new ApiKey({
              id: principal.keyId,
              kind: "personal",
              name: "Console session",
              prefix: "",
              role: principal.role,
              user_id: userId,
              agent_ids: principal.agentIds,
              created_at: found.memberSince,
              last_used_at: null,
              revoked_at: null
            })
          }
      )

    const me = Effect.fn("Identity.me")(function*(principal: Principal) {
      const caller = principal.userId !== null && principal.keyId === consoleKeyId(principal.userId)
        ? yield* consoleCaller(principal, principal.userId)
        : yield* repo.findCaller(principal.organizationId, principal.keyId)
      if (caller === undefined) return yield* NotFound.of("API key", principal.keyId)
      return new Me({ ...caller, role: principal.role, role_display: roleDisplayName[principal.role] })
    })

    /** Every member, or with `limit`/`cursor` a page of them (`total` counts them all). */
    const listMembers = Effect.fn("Identity.listMembers")(function*(principal: Principal, params: PageParams = {}) {
      yield* requireOrganizationKey(principal, Policy.listMembers)
      const { organizationId } = principal
      const { next_cursor, rows, total } = yield* listOrPage(
        params,
        (page) => repo.listMembers(organizationId, page),
        repo.countMembers(organizationId)
      )
      return { items: rows.map(toMember), total, next_cursor }
    })

    const createMember = Effect.fn("Identity.createMember")(function*(principal: Principal, input: CreateMember) {
      yield* requireOrganizationKey(principal, Policy.addMembers)
      yield* checkRoleChange(principal, undefined, input.role)
      const user = yield* repo.upsertUser(Crypto.randomUUID() as UserId, input.email, input.name ?? null)
      const added = yield* repo.insertMembership(principal.organizationId, user.id, input.role)
      if (!added) {
        return yield* Conflict.of(`${input.email} is already a member of this organization.`, "already_member")
      }
      yield* audit.record(principal, {
        action: "ADD_MEMBER",
        targets: [{ type: "member", id: user.id, name: user.email }],
        details: { role: input.role }
      })
      return (yield* repo.findMember(principal.organizationId, user.id))!
    }, transaction)

    /** The one Super admin left may not go: an organization always keeps one. */
    const keepsSuperAdmin = (principal: Principal, current: string, next: string | undefined) =>
      Effect.gen(function*() {
        if (current !== "super_admin" || next === "super_admin") return
        if ((yield* repo.countSuperAdmins(principal.organizationId)) <= 1) {
          return yield* Conflict.of(
            "This is the organization's last Super admin; make someone else Super admin first.",
            "last_super_admin"
          )
        }
      })

    const updateMember = Effect.fn("Identity.updateMember")(
      function*(principal: Principal, userId: UserId, input: UpdateMember) {
        yield* requireOrganizationKey(principal, Policy.changeMemberRoles)
        yield* repo.lockOrganization(principal.organizationId)
        const member = yield* repo.findMember(principal.organizationId, userId)
        if (member === undefined) return yield* NotFound.of("Member", userId)
        yield* checkRoleChange(principal, member.role, input.role)
        if (member.role === input.role) return { member, lowered: [] }
        yield* keepsSuperAdmin(principal, member.role, input.role)
        yield* repo.updateMembershipRole(principal.organizationId, userId, input.role)
        const lowered = yield* repo.lowerCreatedKeys(principal.organizationId, userId, input.role)
        yield* audit.record(principal, {
          action: "UPDATE_MEMBER_ROLE",
          targets: [{ type: "member", id: userId, name: member.user.email }],
          details: { from: member.role, to: input.role, ...(lowered.length === 0 ? {} : { lowered_api_keys: lowered }) }
        })
        return { member: (yield* repo.findMember(principal.organizationId, userId))!, lowered }
      },
      transaction
    )

    /**
     * Out of the organization and its groups; their personal keys and MCP authorizations here are revoked
     * (so that adding them back later revives neither), and their personal connections deleted (the
     * credentials erased): only they could use them, and no secret outlives its use. Their links to its identity
     * providers are forgotten.
     */
    const removeMember = Effect.fn("Identity.removeMember")(function*(principal: Principal, userId: UserId) {
      yield* requireOrganizationKey(principal, Policy.removeMembers)
      yield* repo.lockOrganization(principal.organizationId)
      const member = yield* repo.findMember(principal.organizationId, userId)
      if (member === undefined) return yield* NotFound.of("Member", userId)
      yield* checkRoleChange(principal, member.role, undefined)
      yield* keepsSuperAdmin(principal, member.role, undefined)
      const revoked = yield* repo.revokePersonalKeys(principal.organizationId, userId)
      const grants = yield* oauthRepo.revokeGrantsOf(principal.organizationId, userId)
      const connections = yield* connectorRepo.deletePersonalConnections(principal.organizationId, userId)
      // a new account at the provider with their address then starts afresh instead of being refused
      yield* ssoRepo.forgetIdentities(principal.organizationId, userId)
      yield* repo.deleteMembership(principal.organizationId, userId)
      yield* audit.record(principal, {
        action: "REMOVE_MEMBER",
        targets: [{ type: "member", id: userId, name: member.user.email }],
        details: {
          role: member.role,
          revoked_api_keys: revoked,
          revoked_authorizations: grants,
          deleted_connections: connections
        }
      })
      return { keys: revoked, grants }
    }, transaction)

    /** Ids of a member's personal keys, for forgetting cached principals after a role change. */
    const personalKeyIds = (principal: Principal, userId: UserId) =>
      Effect.map(repo.listApiKeys(principal.organizationId, userId), (rows) => rows.map((r) => r.id))

    /** The keys the principal may see, or with `limit`/`cursor` a page of them (`total` counts them all). */
    const listApiKeys = Effect.fn("Identity.listApiKeys")(function*(principal: Principal, params: PageParams = {}) {
      const everyone = holds(principal.role, Policy.manageEveryKey)
      const { organizationId, userId } = principal
      // a key below Admin with no person behind it sees none
      const none = !everyone && userId === null
      const onlyUser = everyone ? null : userId
      const { next_cursor, rows, total } = yield* listOrPage(
        params,
        (page) => none ? Effect.succeed([]) : repo.listApiKeys(organizationId, onlyUser, page),
        none ? Effect.succeed(0) : repo.countApiKeys(organizationId, onlyUser),
        Schema.is(ApiKeyId)
      )
      return { items: rows.map(toApiKey), total, next_cursor }
    })

    const keyCreated = (key: CreatedApiKey) => ({
      action: "CREATE_API_KEY",
      targets: [{ type: "api_key", id: key.id, name: key.name }],
      details: { kind: key.kind, role: key.role, user_id: key.user_id, agent_ids: key.agent_ids }
    })

    /**
     * The person behind a new key: the caller, or for an organization key the member who created it, so that
     * lowering that member's role lowers the keys made with their keys too.
     */
    const creatorOf = (principal: Principal) =>
      principal.userId !== null
        ? Effect.succeed(principal.userId)
        : Effect.map(repo.findApiKey(principal.organizationId, principal.keyId), (key) => key?.created_by ?? null)

    const createApiKey = Effect.fn("Identity.createApiKey")(function*(principal: Principal, input: CreateApiKey) {
      if (input.kind === "organization") {
        yield* requirePermission(principal, Policy.createOrganizationKeys)
        if (input.user_id !== undefined) {
          return yield* BadRequest.of("An organization key has no user: leave out `user_id`, or use kind `personal`.")
        }
        if (input.role !== undefined) {
          yield* requireRoleAtLeast(
            principal,
            input.role,
            `You cannot create a key with the role '${input.role}', which is above your own.`
          )
        }
        // a key limited to agents mints no key reaching further than it does
        const scope = principal.agentIds
        if (scope !== null && (input.agent_ids === undefined || input.agent_ids.some((id) => !scope.includes(id)))) {
          return yield* Forbidden.of(
            `Your key is limited to agents (${
              scope.join(", ") || "none"
            }), so a key it creates must be too: pass \`agent_ids\` among them.`
          )
        }
        const agentIds = input.agent_ids === undefined
          ? undefined
          : yield* agents.check(principal.organizationId, input.agent_ids)
        const creator = yield* creatorOf(principal)
        return yield* createKey(principal.organizationId, { ...input, agent_ids: agentIds }, null, creator)
          .pipe(audit.recorded(principal, keyCreated))
      }
      if (input.agent_ids !== undefined || input.role !== undefined) {
        return yield* BadRequest.of(
          "A personal key carries its user's own role and agents: leave out `role` and `agent_ids`, or use kind `organization`."
        )
      }
      const userId = input.user_id ?? principal.userId
      if (userId === null) {
        return yield* BadRequest.of(
          "This is an organization key, which has no user: pass `user_id` to issue a personal key for a member."
        )
      }
      if (userId !== principal.userId) {
        yield* requirePermission(principal, Policy.issueKeysForOthers)
        // a member's key reaches every agent the member may use, beyond a key limited to agents
        if (principal.agentIds !== null) {
          return yield* Forbidden.of(
            "Your key is limited to agents and a member's key is not: issue keys for members with a key that is not."
          )
        }
      }
      const member = yield* repo.findMember(principal.organizationId, userId)
      if (member === undefined) return yield* NotFound.of("Member", userId)
      // a key acts as its member: issuing one for someone above you would be taking their role
      yield* requireRoleAtLeast(
        principal,
        member.role,
        `You cannot issue a key for a ${roleDisplayName[member.role]}, whose role is above your own.`
      )
      return yield* createKey(principal.organizationId, { ...input, role: member.role }, userId, principal.userId).pipe(
        audit.recorded(principal, keyCreated)
      )
    })

    const revokeApiKey = Effect.fn("Identity.revokeApiKey")(function*(principal: Principal, id: ApiKeyId) {
      const key = yield* repo.findApiKey(principal.organizationId, id)
      // a key the caller may not manage looks like no key at all
      const manageable = key !== undefined &&
        (holds(principal.role, Policy.manageEveryKey) || (key.user_id !== null && key.user_id === principal.userId))
      if (!manageable) return yield* NotFound.of("API key", id)
      if (key.revoked_at !== null) return toApiKey(key)
      // revoking a Super admin's keys would lock them out: as with their role, only their peers may
      if (key.user_id !== principal.userId) {
        const holder = key.user_id === null ? undefined : yield* repo.findMember(principal.organizationId, key.user_id)
        const role = holder?.role ?? key.role
        yield* requireRoleAtLeast(
          principal,
          role,
          `You cannot revoke ${key.user_id === null ? "an organization key with the role" : "a key of a"} ${
            roleDisplayName[role]
          }, which is above your own role.`
        )
      }
      const revoked = yield* repo.revokeApiKey(principal.organizationId, id).pipe(
        audit.recorded(principal, (row) =>
          row === undefined ? undefined : {
            action: "REVOKE_API_KEY",
            targets: [{ type: "api_key", id, name: key.name }],
            details: { kind: key.kind, user_id: key.user_id }
          })
      )
      return toApiKey(revoked!)
    })

    return {
      bootstrap,
      bootstrapIfEmpty,
      me,
      listMembers,
      createMember,
      updateMember,
      removeMember,
      personalKeyIds,
      listApiKeys,
      createApiKey,
      revokeApiKey
    } as const
  }),
  dependencies: [
    IdentityRepo.Default,
    ConnectorRepo.Default,
    OAuthRepo.Default,
    SsoRepo.Default,
    OrganizationAgents.Default,
    AuditLog.Default
  ]
}) {}
