import type { Statement } from "@effect/sql"
import type { PgClient } from "@effect/sql-pg"
import type { Role } from "../../schema/Identity.js"
import type { AgentId } from "../../schema/Ids.js"

/** SQL: the union of the default agents of a person's groups (NULL when their groups name none). */
export const groupAgentsOf = (sql: PgClient.PgClient, organizationId: Statement.Fragment, userId: Statement.Fragment) =>
  // aliases unlike the caller's: the fragment is a correlated subquery inside their statement
  sql`(
    SELECT jsonb_agg(DISTINCT ga_agent.value) FROM group_members ga_member
    JOIN groups ga_group ON ga_group.id = ga_member.group_id
    CROSS JOIN LATERAL jsonb_array_elements_text(ga_group.agent_ids) ga_agent
    WHERE ga_member.organization_id = ${organizationId} AND ga_member.user_id = ${userId}
  )`

/**
 * The agents a person may use. A Member whose groups name default agents may use those only (their
 * groups' shared defaults); a Member whose groups name none, and every Builder and above, may use all.
 */
export const agentsForPerson = (
  role: Role,
  groupAgents: ReadonlyArray<AgentId> | null
): ReadonlyArray<AgentId> | null =>
  role === "member" && groupAgents !== null && groupAgents.length > 0 ? groupAgents : null
