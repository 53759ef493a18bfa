import { Effect } from "effect"
import { Forbidden } from "../../schema/Errors.js"
import { type Role, roleAtLeast, roleDisplayName } from "../../schema/Identity.js"
import type { Principal } from "../../schema/Security.js"

/**
 * Nobody acts on a person, a key or a grant above their own role: fails with `refused` (which names what was
 * refused) unless the caller's role is at least `role`.
 */
export const requireRoleAtLeast = (principal: Principal, role: Role, refused: string) =>
  roleAtLeast(principal.role, role) ? Effect.void : Effect.fail(Forbidden.of(refused))

/**
 * May the caller move someone from `current` (`undefined`: not yet a member) to `next` (`undefined`: out of
 * the organization)? Nobody grants above their own role or changes someone above it, and only a Super admin
 * grants or removes Super admin. The caller is already known to be an Admin or above.
 */
export const checkRoleChange = (principal: Principal, current: Role | undefined, next: Role | undefined) => {
  if ((next === "super_admin" || current === "super_admin") && principal.role !== "super_admin") {
    return Effect.fail(Forbidden.of("Only a Super admin may grant or remove the Super admin role."))
  }
  return Effect.zipRight(
    next === undefined
      ? Effect.void
      : requireRoleAtLeast(principal, next, `You cannot grant the role '${next}', which is above your own.`),
    current === undefined ? Effect.void : requireRoleAtLeast(
      principal,
      current,
      `You cannot change a ${roleDisplayName[current]}, whose role is above your own.`
    )
  )
}

/** A group's default role raises a member's role, never lowers it. */
export const raisedRole = (current: Role | undefined, groupDefault: Role | null): Role =>
  groupDefault === null
    ? current ?? "member"
    : current === undefined || !roleAtLeast(current, groupDefault)
    ? groupDefault
    : current
