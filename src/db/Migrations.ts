import * as Snowflake from "@effect/cluster/Snowflake"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgMigrator } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import { ShardingSettings } from "../cluster/ShardingSettings.js"
import identity from "./migrations/0001_identity.js"
import connectors from "./migrations/0002_connectors.js"
import agents from "./migrations/0003_agents.js"
import taskRecovery from "./migrations/0004_task_recovery.js"
import oauth from "./migrations/0005_oauth.js"
import access from "./migrations/0006_access.js"
import skills from "./migrations/0007_skills.js"
import sso from "./migrations/0008_sso.js"
import taskWrites from "./migrations/0009_task_writes.js"
import agentVersions from "./migrations/0010_agent_versions.js"
import agentVersionTriggers from "./migrations/0011_agent_version_triggers.js"
import threadWrites from "./migrations/0012_thread_writes.js"
import rateLimits from "./migrations/0013_rate_limits.js"
import taskShards from "./migrations/0015_task_shards.js"
import events from "./migrations/0016_events.js"
import schedules from "./migrations/0017_schedules.js"
import files from "./migrations/0018_files.js"
import webhooks from "./migrations/0019_webhooks.js"
import usage from "./migrations/0020_usage.js"
import eventWrites from "./migrations/0021_event_writes.js"
import usageFold from "./migrations/0022_usage_fold.js"
import knowledge from "./migrations/0023_knowledge.js"
import functions from "./migrations/0024_functions.js"
import commandPolicies from "./migrations/0025_command_policies.js"
import functionApprovals from "./migrations/0027_function_approvals.js"
import shardDirectory from "./migrations/0028_shard_directory.js"
import eventJson from "./migrations/0029_event_json.js"
import runFence from "./migrations/0030_run_fence.js"
import secretKeyCheck from "./migrations/0031_secret_key_check.js"
import taskInvoker from "./migrations/0032_task_invoker.js"
import eraseArchivedCredentials from "./migrations/0033_erase_archived_credentials.js"
import keysetMilliseconds from "./migrations/0034_keyset_milliseconds.js"
import taskInvokerScope from "./migrations/0035_task_invoker_scope.js"
import knowledgeCjk from "./migrations/0036_knowledge_cjk.js"
import knowledgeReplaces from "./migrations/0037_knowledge_replaces.js"
import taskErrorCodes from "./migrations/0040_task_error_codes.js"
import fileBytes from "./migrations/0043_file_bytes.js"
import grantSignIn from "./migrations/0044_grant_sign_in.js"
import expiredRows from "./migrations/0045_expired_rows.js"
import ssoIdentityClient from "./migrations/0047_sso_identity_client.js"

/** Our schema, in order. Append only: a released migration never changes. */
export const migrations = {
  "0001_identity": identity,
  "0002_connectors": connectors,
  "0003_agents": agents,
  "0004_task_recovery": taskRecovery,
  "0005_oauth": oauth,
  "0006_access": access,
  "0007_skills": skills,
  "0008_sso": sso,
  "0009_task_writes": taskWrites,
  "0010_agent_versions": agentVersions,
  "0011_agent_version_triggers": agentVersionTriggers,
  "0012_thread_writes": threadWrites,
  "0013_rate_limits": rateLimits,
  "0015_task_shards": taskShards,
  "0016_events": events,
  "0017_schedules": schedules,
  "0018_files": files,
  "0019_webhooks": webhooks,
  "0020_usage": usage,
  "0021_event_writes": eventWrites,
  "0022_usage_fold": usageFold,
  "0023_knowledge": knowledge,
  "0024_functions": functions,
  "0025_command_policies": commandPolicies,
  "0027_function_approvals": functionApprovals,
  "0028_shard_directory": shardDirectory,
  "0029_event_json": eventJson,
  "0030_run_fence": runFence,
  "0031_secret_key_check": secretKeyCheck,
  "0032_task_invoker": taskInvoker,
  "0033_erase_archived_credentials": eraseArchivedCredentials,
  "0034_keyset_milliseconds": keysetMilliseconds,
  "0035_task_invoker_scope": taskInvokerScope,
  "0036_knowledge_cjk": knowledgeCjk,
  "0037_knowledge_replaces": knowledgeReplaces,
  "0040_task_error_codes": taskErrorCodes,
  "0043_file_bytes": fileBytes,
  "0044_grant_sign_in": grantSignIn,
  "0045_expired_rows": expiredRows,
  "0047_sso_identity_client": ssoIdentityClient
} as const

/** The highest migration id (ids are the numeric prefixes, as PgMigrator reads them). */
export const latestMigration = Math.max(...Object.keys(migrations).map((name) => Number.parseInt(name, 10)))

export const migrationsTable = "switchyard_migrations"

/** The highest migration applied to the database (0 before the first); `/readyz` compares it with `latestMigration`. */
export const appliedMigration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ id: number | null }>`SELECT max(migration_id) AS id FROM ${sql(migrationsTable)}`
  return row?.id ?? 0
})

// one lock for every node: several nodes starting at once on an empty database must not race the DDL
const MIGRATION_LOCK = 0x5717c4_01

/**
 * Applies our migrations and creates the cluster's tables, under a database-wide advisory lock,
 * before sharding starts (two runners creating the cluster tables at once can fail).
 */
export const migrate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const conn = yield* sql.reserve
  yield* conn.executeRaw("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK])
  yield* Effect.addFinalizer(() =>
    conn.executeRaw("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).pipe(Effect.ignore)
  )
  const applied = yield* PgMigrator.run({
    loader: PgMigrator.fromRecord(migrations),
    table: migrationsTable
  }).pipe(Effect.provide(NodeContext.layer))
  for (const [id, name] of applied) yield* Effect.logInfo(`applied migration ${id} (${name})`)
  yield* Effect.scoped(SqlMessageStorage.make()).pipe(Effect.provide(Snowflake.layerGenerator))
  yield* Effect.scoped(SqlRunnerStorage.make({})).pipe(Effect.provide(ShardingSettings.layer))
}).pipe(Effect.scoped, Effect.withSpan("Migrations.migrate"))

export const MigrationsLive = Layer.effectDiscard(migrate)
