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

/**
 * `requirePermission`, with a key of the whole organization: what belongs to the organization (its members,
 * groups, single sign-on and model providers, connectors and organizational connections, skills, the audit log,
 * knowledge bases, webhooks, custom functions, new agents) is not read or changed with a key limited to agents,
 * whose reach is those agents (as its event stream already was).
 */
export const requireOrganizationKey = (principal: Principal, permission: Permission) =>
  Effect.zipRight(
    requirePermission(principal, permission),
    principal.agentIds === null
      ? Effect.void
      : Effect.fail(
        Forbidden.of(`A key limited to agents may not ${permission.action}: use a key of the whole organization.`)
      )
  )
