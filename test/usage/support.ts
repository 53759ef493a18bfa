import { ConfigProvider, Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import * as Crypto from "node:crypto"
import pg from "pg"
import type { AgentId, ApiKeyId, OrganizationId, UserId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import type { UsageFilters } from "../../schema/Usage.js"
import { SwitchyardConfig } from "../../src/config/SwitchyardConfig.js"
import { DatabaseLive } from "../../src/db/Database.js"
import { MigrationsLive } from "../../src/db/Migrations.js"
import { Usage } from "../../src/usage/Usage.js"
import { FOLD_MARK, FOLDED_THROUGH, UsageRepo } from "../../src/usage/UsageRepo.js"
import { freshDatabase } from "../support/TestDatabase.js"

/**
 * Folds until what committed before the call is folded: the fold reads only below the oldest transaction
 * still running anywhere on the server (another test's included), so it may take a few rounds.
 */
export const settle = (repo: UsageRepo) =>
  Effect.gen(function*() {
    const mark = yield* repo.mark
    for (let round = 0;; round++) {
      yield* repo.fold
      if (yield* repo.foldedThrough(mark)) return
      if (round > 3000) return yield* Effect.die(new Error("usage fold did not catch up"))
      yield* Effect.sleep("10 millis")
    }
  })

/** The usage service and the rollups' repository on a fresh, migrated database, without a node (no folder runs). */
export const startUsage = async () => startUsageOn(await freshDatabase())

/** The same on a given database, migrated to the latest on start. */
export const startUsageOn = async (databaseUrl: string) => {
  const config = Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map(Object.entries({ DATABASE_URL: databaseUrl, SWITCHYARD_DB_POOL_SIZE: "4" })))
  )
  const runtime = ManagedRuntime.make(
    Layer.mergeAll(Usage.Default, UsageRepo.Default).pipe(
      Layer.provide(MigrationsLive),
      Layer.provideMerge(DatabaseLive),
      Layer.provideMerge(SwitchyardConfig.layer),
      Layer.provide(config),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
    )
  )
  await runtime.runPromise(Usage)
  const db = new pg.Pool({ connectionString: databaseUrl, max: 4 })
  return {
    databaseUrl,
    db,
    report: (principal: Principal, filters: UsageFilters) =>
      runtime.runPromise(Effect.flatMap(Usage, (u) => u.report(principal, filters))),
    /** One round of the fold (what is committed and not folded yet, up to a round's worth). */
    fold: () => runtime.runPromise(Effect.flatMap(UsageRepo, (r) => r.fold)),
    /** Whether a round of the fold would find anything (what an idle node asks before a round). */
    due: () => runtime.runPromise(Effect.flatMap(UsageRepo, (r) => r.due)),
    /** Folds until everything committed before the call is in the rollups (no fixed sleep: rounds until then). */
    settle: () => runtime.runPromise(Effect.flatMap(UsageRepo, settle)),
    stop: async () => {
      await db.end()
      await runtime.dispose()
    }
  }
}
export type UsageWorld = Awaited<ReturnType<typeof startUsage>>

export const adminOf = (organizationId: string, agentIds: ReadonlyArray<string> | null = null): Principal => ({
  organizationId: organizationId as OrganizationId,
  userId: Crypto.randomUUID() as UserId,
  keyId: "k" as ApiKeyId,
  role: "admin",
  agentIds: agentIds as ReadonlyArray<AgentId> | null
})

export const memberOf = (organizationId: string, userId: string): Principal => ({
  organizationId: organizationId as OrganizationId,
  userId: userId as UserId,
  keyId: "k" as ApiKeyId,
  role: "member",
  agentIds: null
})

export interface SeedTask {
  readonly agentId: string
  readonly userId: string
  readonly source: "api" | "mcp" | "schedule"
  readonly status: "completed" | "error" | "cancelled"
  readonly createdAt: Date
  readonly durationMs: number
  readonly calls: ReadonlyArray<
    { provider: string; model: string; input: number; output: number; cached: number; cost: number; at: Date }
  >
}

/**
 * Writes tasks as the API does, in its statements' shapes (tasks have no foreign keys): inserted pending,
 * their model calls recorded, then ended in one UPDATE; each step through the real triggers.
 */
export const seedTasks = async (
  db: pg.Pool | pg.ClientBase,
  organizationId: string,
  tasks: ReadonlyArray<SeedTask>
) => {
  const ids = tasks.map(() => Crypto.randomUUID())
  await db.query(
    `INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input, created_at)
     SELECT t.id, $1, t.agent_id, 'pending', t.source, t.user_id, 'u@example.com', 'hi', t.created_at
     FROM jsonb_to_recordset($2::jsonb) AS t(id uuid, agent_id uuid, source text, user_id text, created_at timestamptz)`,
    [
      organizationId,
      JSON.stringify(
        tasks.map((t, i) => ({ ...t, id: ids[i], agent_id: t.agentId, user_id: t.userId, created_at: t.createdAt }))
      )
    ]
  )
  const calls = tasks.flatMap((t, i) =>
    t.calls.map((c, seq) => ({ task_id: ids[i], seq: seq + 1, agent_id: t.agentId, ...c }))
  )
  if (calls.length > 0) {
    await db.query(
      `INSERT INTO llm_usage (task_id, seq, organization_id, agent_id, provider, model, input_tokens, output_tokens,
         cached_tokens, cost_usd, at)
       SELECT c.task_id, c.seq, $1, c.agent_id, c.provider, c.model, c.input, c.output, c.cached, c.cost, c.at
       FROM jsonb_to_recordset($2::jsonb) AS c(task_id uuid, seq int, agent_id uuid, provider text, model text,
         input int, output int, cached int, cost numeric, at timestamptz)`,
      [organizationId, JSON.stringify(calls)]
    )
  }
  await db.query(
    `UPDATE tasks SET status = e.status, finished_at = tasks.created_at + make_interval(secs => e.ms / 1000.0)
     FROM jsonb_to_recordset($1::jsonb) AS e(id uuid, status text, ms double precision) WHERE tasks.id = e.id`,
    [JSON.stringify(tasks.map((t, i) => ({ id: ids[i], status: t.status, ms: t.durationMs })))]
  )
  return ids
}

/**
 * Waits until a node's folder has folded everything committed before the call (the rollups lag the
 * writes by about a second): polls the fold's positions, no fixed sleep.
 */
export const foldedByNode = async (db: pg.ClientBase | pg.Pool, timeoutMs = 30_000) => {
  const { rows: [{ mark }] } = await db.query<{ mark: string }>(FOLD_MARK)
  const deadline = Date.now() + timeoutMs
  while ((await db.query<{ done: boolean }>(FOLDED_THROUGH, [mark])).rows[0]?.done !== true) {
    if (Date.now() > deadline) throw new Error("the node's usage folder did not catch up")
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
