import { Effect } from "effect"
import { Forbidden } from "../../schema/Errors.js"
import { type Role, roleAtLeast, roleDisplayName } from "../../schema/Identity.js"
import type { Principal } from "../../schema/Security.js"

/** Deny unless the caller's role is at least `minimum`. */
export const requireRole = (principal: Principal, minimum: Role, action: string) =>
  roleAtLeast(principal.role, minimum)
    ? Effect.void
    : Effect.fail(
      Forbidden.of(
        `Only ${roleDisplayName[minimum]} and above may ${action}; your role is ${roleDisplayName[principal.role]}.`
      )
    )
