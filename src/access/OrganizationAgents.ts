import { Effect } from "effect"
import { BadRequest } from "../../schema/Errors.js"
import type { AgentId, OrganizationId } from "../../schema/Ids.js"
import { GroupRepo } from "./GroupRepo.js"

/**
 * The one check of the agents a caller names for others to use: a group's default agents and an organization
 * key's `agent_ids`. Each must be a live agent of the organization; another organization's agent is refused in
 * the same words as one that does not exist, so the answer says nothing about other organizations.
 */
export class OrganizationAgents extends Effect.Service<OrganizationAgents>()("access/OrganizationAgents", {
  effect: Effect.gen(function*() {
    const repo = yield* GroupRepo

    /** The ids without repeats; 400 `unknown_agent` naming every one that is not a live agent here. */
    const check = Effect.fn("OrganizationAgents.check")(
      function*(organizationId: OrganizationId, ids: ReadonlyArray<AgentId>) {
        const unique = Array.from(new Set(ids))
        const known = yield* repo.existingAgents(organizationId, unique)
        const unknown = unique.filter((id) => !known.has(id))
        if (unknown.length > 0) {
          return yield* BadRequest.of(
            `\`agent_ids\`: no agent ${unknown.map((id) => `'${id}'`).join(", ")} in this organization.`,
            { unknown_agent_ids: unknown },
            "unknown_agent"
          )
        }
        return unique
      }
    )

    return { check } as const
  }),
  dependencies: [GroupRepo.Default]
}) {}
