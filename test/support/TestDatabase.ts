import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgMigrator } from "@effect/sql-pg"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import * as Crypto from "node:crypto"
import pg from "pg"
import { inject } from "vitest"
import { SwitchyardConfig } from "../../src/config/SwitchyardConfig.js"
import { DatabaseLive } from "../../src/db/Database.js"
import { migrations, migrationsTable } from "../../src/db/Migrations.js"

const createDatabase = async (template: string | undefined): Promise<string> => {
  const base = inject("databaseUrl")
  const name = `t_${Crypto.randomBytes(6).toString("hex")}`
  const client = new pg.Client({ connectionString: base })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${name}${template === undefined ? "" : ` TEMPLATE ${template}`}`)
  } finally {
    await client.end()
  }
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}

/** A fresh, empty database on the run's PostgreSQL: each test node gets its own cluster tables. */
export const freshDatabase = (): Promise<string> => createDatabase(undefined)

/**
 * A fresh database with every migration already applied (a copy of the run's template, globalSetup.ts):
 * what a node's database is after its first start. Empty when the run has no template.
 */
export const migratedDatabase = (): Promise<string> => createDatabase(inject("migratedTemplate"))

/** Applies our migrations below `below` only: a database as an earlier release left it (to test an upgrade). */
export const migrateBelow = async (databaseUrl: string, below: number) => {
  const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => Number.parseInt(name, 10) < below))
  await Effect.runPromise(
    PgMigrator.run({ loader: PgMigrator.fromRecord(before), table: migrationsTable }).pipe(
      Effect.provide(NodeContext.layer),
      Effect.flatMap(() => Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1`)),
      Effect.provide(DatabaseLive.pipe(Layer.provideMerge(SwitchyardConfig.layer))),
      Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", databaseUrl]])))
    )
  )
}
