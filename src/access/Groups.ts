import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import type { AddGroupMember, CreateGroup, GroupId, UpdateGroup } from "../../schema/Access.js"
import { Conflict, NotFound } from "../../schema/Errors.js"
import { Member, type Role, roleDisplayName, User } from "../../schema/Identity.js"
import type { UserId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { AuditLog, changedFields } from "../audit/AuditLog.js"
import { transactionIn } from "../db/Transaction.js"
import { requireOrganizationKey } from "../identity/IdentityPolicy.js"
import { IdentityRepo } from "../identity/IdentityRepo.js"
import { pageOf, positionOf } from "../support/Cursor.js"
import { invalidField } from "../support/Issues.js"
import { sameList } from "../support/Lists.js"
import { type GroupFields, groupNameTaken, GroupRepo, toGroup } from "./GroupRepo.js"
import { OrganizationAgents } from "./OrganizationAgents.js"
import { checkRoleChange, raisedRole } from "./RolePolicy.js"

/** Groups: members who share defaults. Admins and above manage them; every change is audited. */
export class Groups extends Effect.Service<Groups>()("access/Groups", {
  effect: Effect.gen(function*() {
    const repo = yield* GroupRepo
    const agents = yield* OrganizationAgents
    const identity = yield* IdentityRepo
    const audit = yield* AuditLog
    const sql = yield* SqlClient.SqlClient

    const find = (principal: Principal, id: GroupId, lock = false) =>
      Effect.flatMap(
        repo.find(principal.organizationId, id, lock),
        (row) => row === undefined ? Effect.fail(NotFound.of("Group", id)) : Effect.succeed(row)
      )

    /** A default role is one the caller could grant; default agents are live agents of the organization. */
    const checkFields = (principal: Principal, fields: GroupFields) =>
      Effect.gen(function*() {
        if (fields.default_role !== null) yield* checkRoleChange(principal, undefined, fields.default_role)
        return { ...fields, agent_ids: yield* agents.check(principal.organizationId, fields.agent_ids) } as GroupFields
      })

    const list = Effect.fn("Groups.list")(
      function*(
        principal: Principal,
        page: { readonly limit?: number | undefined; readonly cursor?: string | undefined }
      ) {
        yield* requireOrganizationKey(principal, Policy.manageGroups)
        const after = yield* positionOf(page.cursor)
        const limit = page.limit ?? 50
        const rows = yield* repo.list(principal.organizationId, after, limit + 1)
        return pageOf(rows, limit, (row) => row.created_at, toGroup)
      }
    )

    const get = Effect.fn("Groups.get")(function*(principal: Principal, id: GroupId) {
      yield* requireOrganizationKey(principal, Policy.manageGroups)
      return toGroup(yield* find(principal, id))
    })

    const create = Effect.fn("Groups.create")(function*(principal: Principal, input: CreateGroup) {
      yield* requireOrganizationKey(principal, Policy.manageGroups)
      const fields = yield* checkFields(principal, {
        name: input.name,
        description: input.description ?? "",
        default_role: input.default_role ?? null,
        agent_ids: input.agent_ids ?? []
      })
      const id = Crypto.randomUUID() as GroupId
      const row = yield* repo.insert(principal.organizationId, id, fields, principal.userId).pipe(
        audit.recorded(principal, (row) =>
          row === undefined ? undefined : {
            action: "CREATE_GROUP",
            targets: [{ type: "group", id, name: fields.name }],
            details: { default_role: fields.default_role, agent_ids: fields.agent_ids }
          })
      )
      if (row === undefined) return yield* groupNameTaken(fields.name)
      return toGroup(row)
    })

    const update = Effect.fn("Groups.update")(function*(principal: Principal, id: GroupId, input: UpdateGroup) {
      yield* requireOrganizationKey(principal, Policy.manageGroups)
      // the row locked from its read to its write: two PATCHes at once (a rename and a new description) each
      // apply to what the other wrote, rather than the later writing back what the earlier changed
      return yield* transactionIn(sql)(Effect.gen(function*() {
        const current = yield* find(principal, id, true)
        const fields = yield* checkFields(principal, {
          name: input.name ?? current.name,
          description: input.description ?? current.description,
          default_role: input.default_role === undefined ? current.default_role : input.default_role,
          agent_ids: input.agent_ids ?? current.agent_ids
        })
        // nothing to change (`{}`, what it holds already): not written (`updated_at` stays), nothing audited
        if (
          fields.name === current.name && fields.description === current.description &&
          fields.default_role === current.default_role && sameList(fields.agent_ids, current.agent_ids)
        ) return toGroup(current)
        const row = yield* repo.update(principal.organizationId, id, fields).pipe(
          audit.recorded(principal, (row) =>
            row === undefined || changedFields(input).length === 0 ? undefined : {
              action: "UPDATE_GROUP",
              targets: [{ type: "group", id, name: fields.name }],
              details: {
                changed: changedFields(input)
              }
            })
        )
        if (row === undefined) return yield* NotFound.of("Group", id)
        return toGroup(row)
      }))
    })

    const remove = Effect.fn("Groups.remove")(function*(principal: Principal, id: GroupId) {
      yield* requireOrganizationKey(principal, Policy.manageGroups)
      const current = yield* find(principal, id)
      const removed = yield* repo.remove(principal.organizationId, id).pipe(
        audit.recorded(principal, (removed) =>
          removed
            ? {
              action: "DELETE_GROUP",
              targets: [{ type: "group", id, name: current.name }],
              details: { members: current.member_count }
            }
            : undefined)
      )
      if (!removed) return yield* NotFound.of("Group", id)
    })

    const members = Effect.fn("Groups.members")(function*(
      principal: Principal,
      id: GroupId,
      page: { readonly limit?: number | undefined; readonly cursor?: string | undefined }
    ) {
      yield* requireOrganizationKey(principal, Policy.manageGroups)
      yield* find(principal, id)
      const after = yield* positionOf(page.cursor)
      const limit = page.limit ?? 50
      const rows = yield* repo.members(principal.organizationId, id, after, limit + 1)
      return pageOf(rows, limit, (row) => row.added_at, (r) =>
        new Member({
          user: new User({ id: r.id, email: r.email, name: r.name }),
          role: r.role,
          role_display: roleDisplayName[r.role],
          created_at: r.created_at
        }))
    })

    /**
     * Adds a member (or a person, by e-mail, to the organization first). The group's default role applies
     * when it is above theirs; each change (joining the organization, a raised role, joining the group) is
     * its own record, all in one transaction.
     */
    const addMember = Effect.fn("Groups.addMember")(
      function*(principal: Principal, id: GroupId, input: AddGroupMember) {
        yield* requireOrganizationKey(principal, Policy.manageGroups)
        if ((input.user_id === undefined) === (input.email === undefined)) {
          return yield* invalidField("", "Give either `user_id` (a member) or `email` (a person).")
        }
        yield* identity.lockOrganization(principal.organizationId)
        const group = yield* find(principal, id)
        let userId: UserId
        let current: Role | undefined
        let email: string
        if (input.user_id !== undefined) {
          const member = yield* identity.findMember(principal.organizationId, input.user_id)
          if (member === undefined) return yield* NotFound.of("Member", input.user_id)
          userId = member.user.id
          current = member.role
          email = member.user.email
        } else {
          const user = yield* identity.upsertUser(Crypto.randomUUID() as UserId, input.email!, input.name ?? null)
          const member = yield* identity.findMember(principal.organizationId, user.id)
          userId = user.id
          current = member?.role
          email = user.email
        }
        const role = raisedRole(current, group.default_role)
        const target = { type: "member", id: userId, name: email }
        if (current === undefined) {
          yield* checkRoleChange(principal, undefined, role)
          yield* identity.insertMembership(principal.organizationId, userId, role)
          yield* audit.record(principal, {
            action: "ADD_MEMBER",
            targets: [target],
            details: { role, group_id: id }
          })
        } else if (role !== current) {
          yield* checkRoleChange(principal, current, role)
          yield* identity.updateMembershipRole(principal.organizationId, userId, role)
          yield* audit.record(principal, {
            action: "UPDATE_MEMBER_ROLE",
            targets: [target],
            details: { from: current, to: role, group_id: id }
          })
        }
        if (!(yield* repo.addMember(principal.organizationId, id, userId))) {
          return yield* Conflict.of(`${email} is already in the group '${group.name}'.`, "already_in_group")
        }
        yield* audit.record(principal, {
          action: "ADD_GROUP_MEMBER",
          targets: [{ type: "group", id, name: group.name }, target]
        })
        return (yield* identity.findMember(principal.organizationId, userId))!
      },
      transactionIn(sql)
    )

    const removeMember = Effect.fn("Groups.removeMember")(function*(principal: Principal, id: GroupId, userId: UserId) {
      yield* requireOrganizationKey(principal, Policy.manageGroups)
      const group = yield* find(principal, id)
      const removed = yield* repo.removeMember(principal.organizationId, id, userId).pipe(
        audit.recorded(principal, (removed) =>
          removed
            ? {
              action: "REMOVE_GROUP_MEMBER",
              targets: [{ type: "group", id, name: group.name }, { type: "member", id: userId }]
            }
            : undefined)
      )
      if (!removed) return yield* NotFound.of(`Member '${userId}' of group`, id)
    })

    return { list, get, create, update, remove, members, addMember, removeMember } as const
  }),
  dependencies: [GroupRepo.Default, OrganizationAgents.Default, IdentityRepo.Default, AuditLog.Default]
}) {}
