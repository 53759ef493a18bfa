import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import type { GroupId } from "../../schema/Access.js"
import type { Role } from "../../schema/Identity.js"
import type { UserId } from "../../schema/Ids.js"
import { GroupRepo } from "../access/GroupRepo.js"
import { raisedRole } from "../access/RolePolicy.js"
import { type AuditBy, AuditLog } from "../audit/AuditLog.js"
import { transactionIn } from "../db/Transaction.js"
import { IdentityRepo } from "../identity/IdentityRepo.js"
import { SsoRepo, type SsoRow } from "./SsoRepo.js"

/** What the identity provider vouched for, from the verified ID token (and userinfo). */
export interface IdpPerson {
  readonly subject: string
  readonly email: string | undefined
  readonly emailVerified: unknown
  readonly name: string | null
  readonly groups: ReadonlyArray<string>
}

/**
 * Only a provider's plain yes: `true`, or the string "true" some providers send. Anything else (absent,
 * `false`, "FALSE", 0, "yes") does not vouch for the address, and the address is what admits a person.
 */
const isVerified = (claim: unknown) => claim === true || claim === "true"

export class SignInDenied {
  readonly _tag = "SignInDenied"
  constructor(readonly message: string) {}
}

/**
 * Just-in-time provisioning and group sync. On every sign-in, in one transaction with its audit records:
 * the person becomes a member (first time: with the highest default role of their mapped groups, else
 * `member`), joins the mapped groups the provider lists them in and leaves the mapped groups it no longer
 * does. Groups nobody mapped are left alone; leaving a group keeps the role (as everywhere in groups).
 */
export class SsoProvisioning extends Effect.Service<SsoProvisioning>()("sso/SsoProvisioning", {
  effect: Effect.gen(function*() {
    const repo = yield* SsoRepo
    const identity = yield* IdentityRepo
    const groups = yield* GroupRepo
    const audit = yield* AuditLog
    const transaction = transactionIn(yield* SqlClient.SqlClient)

    const deny = (by: AuditBy, settings: SsoRow, person: IdpPerson, reason: string, message: string) =>
      audit.record(by, {
        action: "SSO_SIGN_IN",
        outcome: "denied",
        targets: [{
          type: "identity",
          id: person.subject,
          ...(person.email === undefined ? {} : { name: person.email })
        }],
        details: { issuer: settings.issuer, reason }
      }).pipe(Effect.zipRight(Effect.fail(new SignInDenied(message))))

    const signIn = Effect.fn("SsoProvisioning.signIn")(function*(settings: SsoRow, person: IdpPerson) {
      const organizationId = settings.organization_id
      const system: AuditBy = { organizationId, actor: { type: "system", id: "sso", key_id: null } }
      const email = person.email
      if (email === undefined || !/^[^\s@]+@[^\s@]+$/.test(email)) {
        return yield* deny(
          system,
          settings,
          person,
          "no_email",
          "The identity provider sent no e-mail address for you."
        )
      }
      if (!isVerified(person.emailVerified)) {
        return yield* deny(
          system,
          settings,
          person,
          "email_not_verified",
          `${email} is not verified at the identity provider (its \`email_verified\` is not true). Verify it there, ` +
            "then sign in again."
        )
      }
      const domain = email.slice(email.lastIndexOf("@") + 1).toLowerCase()
      if (!settings.allowed_email_domains.includes(domain)) {
        return yield* deny(
          system,
          settings,
          person,
          "email_domain_not_allowed",
          `${email} may not sign in to this organization: its e-mail domain ${domain} is not one it allows.`
        )
      }

      const signedIn = yield* Effect.gen(function*() {
        yield* identity.lockOrganization(organizationId)
        const linked = yield* repo.findIdentity(organizationId, settings, person.subject)
        // not linked yet (first sign-in, or a new provider): the person is found by the verified e-mail
        const userId = linked ?? (yield* identity.upsertUser(Crypto.randomUUID() as UserId, email, person.name)).id
        if (linked === undefined) {
          // the same provider vouching for that e-mail under another subject is another account there (an
          // address passed on): it does not take over the person it was linked to
          if (yield* repo.linkedElsewhere(organizationId, settings, person.subject, userId)) return undefined
          yield* repo.linkIdentity(organizationId, settings, person.subject, userId)
        }
        const target = { type: "member", id: userId, name: email }

        const managed = Array.from(new Set(settings.group_mapping.map((m) => m.group_id)))
        const listed = new Set(person.groups)
        const wanted = new Set(settings.group_mapping.filter((m) => listed.has(m.idp_group)).map((m) => m.group_id))
        // a mapped group deleted since is simply skipped
        const existing = new Map((yield* repo.existingGroups(organizationId, managed)).map((g) => [g.id as string, g]))
        const member = yield* identity.findMember(organizationId, userId)
        const current = member === undefined ? new Set<string>() : yield* repo.memberOf(organizationId, userId, managed)
        const joining = [...wanted].filter((id) => existing.has(id) && !current.has(id))
        const leaving = managed.filter((id) => current.has(id) && !wanted.has(id))

        // joining a group raises the role to its default, never lowers it (as adding through a group does)
        const role = joining.reduce<Role | undefined>(
          (role, id) => raisedRole(role, existing.get(id)!.default_role),
          member?.role
        ) ?? "member"
        if (member === undefined) {
          yield* identity.insertMembership(organizationId, userId, role)
          yield* audit.record(system, { action: "ADD_MEMBER", targets: [target], details: { role, via: "sso" } })
        } else if (role !== member.role) {
          yield* identity.updateMembershipRole(organizationId, userId, role)
          yield* audit.record(system, {
            action: "UPDATE_MEMBER_ROLE",
            targets: [target],
            details: { from: member.role, to: role, via: "sso" }
          })
        }
        for (const id of joining) {
          yield* groups.addMember(organizationId, id as GroupId, userId)
          yield* audit.record(system, {
            action: "ADD_GROUP_MEMBER",
            targets: [{ type: "group", id, name: existing.get(id)!.name }, target],
            details: { via: "sso" }
          })
        }
        for (const id of leaving) {
          yield* groups.removeMember(organizationId, id as GroupId, userId)
          yield* audit.record(system, {
            action: "REMOVE_GROUP_MEMBER",
            targets: [{ type: "group", id, ...(existing.has(id) ? { name: existing.get(id)!.name } : {}) }, target],
            details: { via: "sso" }
          })
        }
        yield* audit.record({ organizationId, actor: { type: "user", id: userId, key_id: null } }, {
          action: "SSO_SIGN_IN",
          targets: [target],
          details: {
            issuer: settings.issuer,
            subject: person.subject,
            provisioned: member === undefined,
            matched: linked === undefined ? "email" : "subject",
            groups_added: joining,
            groups_removed: leaving
          }
        })
        return userId
      }).pipe(transaction)
      if (signedIn === undefined) {
        return yield* deny(
          system,
          settings,
          person,
          "subject_changed",
          `${email} signed in here before with another account of this identity provider (another \`sub\`). If ` +
            "the address is yours now, an administrator must first remove its former member from the organization; " +
            "then sign in again."
        )
      }
      return signedIn
    })

    return { signIn } as const
  }),
  dependencies: [SsoRepo.Default, IdentityRepo.Default, GroupRepo.Default, AuditLog.Default]
}) {}
