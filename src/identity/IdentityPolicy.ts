import { Effect } from "effect"
import { Forbidden } from "../../schema/Errors.js"
import { roleDisplayName } from "../../schema/Identity.js"
import { holds, type Permission } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"

/** Deny unless the caller holds `permission` (schema/Policy.ts), saying who may. */
export const requirePermission = (principal: Principal, permission: Permission) =>
  holds(principal.role, permission)
    ? Effect.void
    : Effect.fail(
      Forbidden.of(
        `Only ${roleDisplayName[permission.role]} and above may ${permission.action}; your role is ${
          roleDisplayName[principal.role]
        }.`
      )
    )
