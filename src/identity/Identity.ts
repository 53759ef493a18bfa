import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import * as Crypto from "node:crypto"
import { BadRequest, Conflict, Forbidden, NotFound } from "../../schema/Errors.js"
import {
  type CreateApiKey,
  CreatedApiKey,
  type CreateMember,
  Me,
  roleAtLeast,
  roleDisplayName
} from "../../schema/Identity.js"
import type { ApiKeyId, OrganizationId, UserId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { generateApiKey } from "./ApiKeySecret.js"
import { requireRole } from "./IdentityPolicy.js"
import { IdentityRepo, toApiKey } from "./IdentityRepo.js"

export interface Bootstrapped {
  readonly organization_id: OrganizationId
  readonly user_id: UserId
  readonly api_key: string
}

// serializes first-start bootstrap across nodes starting at once
const BOOTSTRAP_LOCK = 0x5717c4_02

export class Identity extends Effect.Service<Identity>()("identity/Identity", {
  effect: Effect.gen(function*() {
    const repo = yield* IdentityRepo
    const sql = yield* SqlClient.SqlClient

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
        return { organization_id: organization.id, user_id: user.id, api_key: key.api_key } satisfies Bootstrapped
      },
      sql.withTransaction
    )

    /** On the first start of an empty database: the default organization. `None` when one exists. */
    const bootstrapIfEmpty = Effect.fn("Identity.bootstrapIfEmpty")(
      function*(input: { readonly organization: string; readonly email: string }) {
        yield* sql`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`
        if ((yield* repo.countOrganizations) > 0) return Option.none<Bootstrapped>()
        return Option.some(yield* bootstrap(input))
      },
      sql.withTransaction
    )

    const me = Effect.fn("Identity.me")(function*(principal: Principal) {
      const caller = yield* repo.findCaller(principal.organizationId, principal.keyId)
      if (caller === undefined) return yield* NotFound.of("API key", principal.keyId)
      return new Me({ ...caller, role: principal.role, role_display: roleDisplayName[principal.role] })
    })

    const listMembers = Effect.fn("Identity.listMembers")(function*(principal: Principal) {
      yield* requireRole(principal, "admin", "list members")
      const items = yield* repo.listMembers(principal.organizationId)
      return { items, total: items.length }
    })

    const createMember = Effect.fn("Identity.createMember")(function*(principal: Principal, input: CreateMember) {
      yield* requireRole(principal, "admin", "add members")
      if (!roleAtLeast(principal.role, input.role)) {
        return yield* Forbidden.of(`You cannot grant the role '${input.role}', which is above your own.`)
      }
      const user = yield* repo.upsertUser(Crypto.randomUUID() as UserId, input.email, input.name ?? null)
      const added = yield* repo.insertMembership(principal.organizationId, user.id, input.role)
      if (!added) {
        return yield* Conflict.of(`${input.email} is already a member of this organization.`, "already_member")
      }
      return (yield* repo.findMember(principal.organizationId, user.id))!
    }, sql.withTransaction)

    const listApiKeys = Effect.fn("Identity.listApiKeys")(function*(principal: Principal) {
      const everyone = roleAtLeast(principal.role, "admin")
      if (!everyone && principal.userId === null) return { items: [], total: 0 }
      const rows = yield* repo.listApiKeys(principal.organizationId, everyone ? null : principal.userId)
      return { items: rows.map(toApiKey), total: rows.length }
    })

    const createApiKey = Effect.fn("Identity.createApiKey")(function*(principal: Principal, input: CreateApiKey) {
      if (input.kind === "organization") {
        yield* requireRole(principal, "admin", "create organization keys")
        if (input.user_id !== undefined) {
          return yield* BadRequest.of("An organization key has no user: leave out `user_id`, or use kind `personal`.")
        }
        if (input.role !== undefined && !roleAtLeast(principal.role, input.role)) {
          return yield* Forbidden.of(`You cannot create a key with the role '${input.role}', which is above your own.`)
        }
        return yield* createKey(principal.organizationId, input, null, principal.userId)
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
      if (userId !== principal.userId) yield* requireRole(principal, "admin", "issue keys for other members")
      const member = yield* repo.findMember(principal.organizationId, userId)
      if (member === undefined) return yield* NotFound.of("Member", userId)
      return yield* createKey(principal.organizationId, { ...input, role: member.role }, userId, principal.userId)
    })

    const revokeApiKey = Effect.fn("Identity.revokeApiKey")(function*(principal: Principal, id: ApiKeyId) {
      const key = yield* repo.findApiKey(principal.organizationId, id)
      // a key the caller may not manage looks like no key at all
      const manageable = key !== undefined &&
        (roleAtLeast(principal.role, "admin") || (key.user_id !== null && key.user_id === principal.userId))
      if (!manageable) return yield* NotFound.of("API key", id)
      return toApiKey((yield* repo.revokeApiKey(principal.organizationId, id))!)
    })

    return {
      bootstrap,
      bootstrapIfEmpty,
      me,
      listMembers,
      createMember,
      listApiKeys,
      createApiKey,
      revokeApiKey
    } as const
  }),
  dependencies: [IdentityRepo.Default]
}) {}
