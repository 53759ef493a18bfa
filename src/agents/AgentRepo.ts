import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { AgentSkill, Budget, ModelConfig } from "../../schema/Agents.js"
import type { AgentId, OrganizationId, UserId } from "../../schema/Ids.js"
import { keyset } from "../db/Keyset.js"
import type { PageRequest } from "../support/Cursor.js"

export interface AgentRow {
  readonly id: AgentId
  readonly organization_id: OrganizationId
  readonly name: string
  readonly instructions: string
  readonly model: ModelConfig
  readonly skills: ReadonlyArray<AgentSkill>
  readonly budget: Budget | null
  readonly max_steps: number
  readonly max_tokens: number | null
  readonly timeout_seconds: number | null
  /** 1 when created, one more on each change of configuration; each version's snapshot is in `agent_versions`. */
  readonly version: number
  readonly created_by: UserId | null
  readonly created_at: Date
  readonly updated_at: Date
}

export type AgentFields = Omit<
  AgentRow,
  "id" | "organization_id" | "version" | "created_by" | "created_at" | "updated_at"
>

/** Start of the budget period containing `at` (UTC); the epoch for `total`. */
export const periodStart = (period: Budget["period"], at = new Date()) =>
  period === "day"
    ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()))
    : period === "month"
    ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1))
    : new Date(0)

/** The most `agent_spend.spent_usd` (numeric(14, 8)) holds. */
export const MAX_SPENT_USD = 999_999.99999999

/** Agents and their spending; a failed statement is a defect. */
export class AgentRepo extends Effect.Service<AgentRepo>()("agents/AgentRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    // versions are the database's: a change of configuration raises `version`, and each version's snapshot
    // is kept in agent_versions (migration 0011)
    const insert = (a: AgentFields & { id: AgentId; organization_id: OrganizationId; created_by: UserId | null }) =>
      sql<AgentRow>`
        INSERT INTO agents (id, organization_id, name, instructions, model, skills, budget, max_steps, max_tokens,
          timeout_seconds, created_by)
        VALUES (${a.id}, ${a.organization_id}, ${a.name}, ${a.instructions}, ${JSON.stringify(a.model)}::jsonb,
          ${JSON.stringify(a.skills)}::jsonb, ${a.budget === null ? null : JSON.stringify(a.budget)}::jsonb,
          ${a.max_steps}, ${a.max_tokens}, ${a.timeout_seconds}, ${a.created_by})
        RETURNING *`.pipe(Effect.map(([row]) => row!), Effect.orDie)

    /**
     * Undefined when there is no such agent, or when its configuration is this already (compared as the version
     * trigger compares it): a change that changes nothing is not written (`updated_at` stays).
     */
    const update = (organizationId: OrganizationId, id: AgentId, a: AgentFields) => {
      const model = JSON.stringify(a.model)
      const skills = JSON.stringify(a.skills)
      const budget = a.budget === null ? null : JSON.stringify(a.budget)
      return sql<AgentRow>`
        UPDATE agents SET name = ${a.name}, instructions = ${a.instructions}, model = ${model}::jsonb,
          skills = ${skills}::jsonb, budget = ${budget}::jsonb,
          max_steps = ${a.max_steps}, max_tokens = ${a.max_tokens}, timeout_seconds = ${a.timeout_seconds},
          updated_at = now()
        WHERE id = ${id} AND organization_id = ${organizationId} AND deleted_at IS NULL
          AND (name, instructions, model, skills, budget, max_steps, max_tokens, timeout_seconds) IS DISTINCT FROM
            (${a.name}::text, ${a.instructions}::text, ${model}::jsonb, ${skills}::jsonb, ${budget}::jsonb,
             ${a.max_steps}::int, ${a.max_tokens}::int, ${a.timeout_seconds}::int)
        RETURNING *`.pipe(Effect.map(([row]): AgentRow | undefined => row), Effect.orDie)
    }

    /** With `lock`, the row is locked until the caller's transaction ends (a change reads what it changes). */
    const find = (organizationId: OrganizationId, id: AgentId, lock = false) =>
      sql<AgentRow>`
        SELECT * FROM agents WHERE id = ${id} AND organization_id = ${organizationId} AND deleted_at IS NULL
        ${lock ? sql`FOR UPDATE` : sql``}`.pipe(Effect.map(([row]): AgentRow | undefined => row), Effect.orDie)

    /** For the Agent entity, which serves callers already authorized. */
    const findById = (id: AgentId) =>
      sql<AgentRow>`SELECT * FROM agents WHERE id = ${id}`.pipe(
        Effect.map(([row]): AgentRow | undefined => row),
        Effect.orDie
      )

    const listed = (organizationId: OrganizationId, only: ReadonlyArray<AgentId> | null) =>
      sql`a.organization_id = ${organizationId} AND a.deleted_at IS NULL
        ${only === null ? sql`` : only.length === 0 ? sql`AND false` : sql`AND a.id::text IN ${sql.in(only)}`}`

    /** Oldest first; with `page`, a page of them (see `keyset`). */
    const list = (organizationId: OrganizationId, only: ReadonlyArray<AgentId> | null, page?: PageRequest) => {
      const k = keyset(sql, "a", page)
      return sql<AgentRow>`
        SELECT a.* FROM agents a WHERE ${listed(organizationId, only)} ${k.after} ${k.order} ${k.limit}`
        .pipe(Effect.orDie)
    }

    const count = (organizationId: OrganizationId, only: ReadonlyArray<AgentId> | null) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM agents a WHERE ${listed(organizationId, only)}`
        .pipe(Effect.map(([r]) => r?.n ?? 0), Effect.orDie)

    const remove = (organizationId: OrganizationId, id: AgentId) =>
      sql`UPDATE agents SET deleted_at = now() WHERE id = ${id} AND organization_id = ${organizationId} AND deleted_at IS NULL
          RETURNING id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    /** Spend in the current period, and whether a call was already refused for lack of budget in it. */
    const spending = (id: AgentId, budget: Budget | null) =>
      budget === null
        ? Effect.succeed({ spent: 0, exhausted: false })
        : sql<{ spent: string; exhausted: boolean }>`
            SELECT spent_usd::text AS spent, exhausted FROM agent_spend
            WHERE agent_id = ${id} AND period_start = ${periodStart(budget.period)}`
          .pipe(
            Effect.map(([row]) => ({ spent: Number(row?.spent ?? 0), exhausted: row?.exhausted ?? false })),
            Effect.orDie
          )

    const spent = (id: AgentId, budget: Budget | null) => Effect.map(spending(id, budget), (s) => s.spent)

    const markExhausted = (id: AgentId, budget: Budget) =>
      sql`
        INSERT INTO agent_spend (agent_id, period_start, exhausted) VALUES (${id}, ${periodStart(budget.period)}, true)
        ON CONFLICT (agent_id, period_start) DO UPDATE SET exhausted = true`.pipe(Effect.asVoid, Effect.orDie)

    /** A changed budget gets a fresh look: calls are tried again. */
    const clearExhausted = (id: AgentId) =>
      sql`UPDATE agent_spend SET exhausted = false WHERE agent_id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    /**
     * Adds to the period's spend, which saturates at what the column holds (MAX_SPENT_USD) rather than failing:
     * a spend refused, reported again, was refused again without end. That is far past any budget under
     * $999,999, which it still shows spent; the Agent entity keeps its own count besides.
     */
    const addSpend = (id: AgentId, budget: Budget, usd: number) =>
      sql`
        INSERT INTO agent_spend (agent_id, period_start, spent_usd)
        VALUES (${id}, ${periodStart(budget.period)}, ${Math.min(usd, MAX_SPENT_USD)})
        ON CONFLICT (agent_id, period_start) DO UPDATE
        SET spent_usd = LEAST(agent_spend.spent_usd + excluded.spent_usd, ${MAX_SPENT_USD})`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    return {
      insert,
      update,
      find,
      findById,
      list,
      count,
      remove,
      spending,
      spent,
      addSpend,
      markExhausted,
      clearExhausted
    } as const
  })
}) {}
