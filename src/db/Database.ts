import { Reactivity } from "@effect/experimental"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import * as Pg from "pg"
import { runnerConnectionName } from "../cluster/RunnerConnections.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { closeCancelledConnections } from "./CancelGuard.js"
import * as EmbeddedPostgres from "./EmbeddedPostgres.js"
import { PgPool } from "./PgPool.js"

const make = (attach: boolean) =>
  Layer.scopedContext(
    Effect.gen(function*() {
      const config = yield* SwitchyardConfig
      const url = yield* Option.match(config.databaseUrl, {
        onSome: Effect.succeed,
        onNone: () =>
          EmbeddedPostgres.make({ dataDir: config.dataDir, port: config.embeddedPostgresPort, attach }).pipe(
            Effect.map((pg) => pg.url)
          )
      })
      // one pool for PgClient and for the prepared statements of the hot paths (PgPool)
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const pool = new Pg.Pool({
            connectionString: Redacted.value(url),
            max: config.dbPoolSize,
            // a node must notice a dead database instead of hanging on it
            connectionTimeoutMillis: 10_000,
            idleTimeoutMillis: 60_000,
            // a node's connections carry its runner's name: a hung node's are ended by the others
            // (src/cluster/RunnerConnections.ts); a one-off command's are not a runner's
            application_name: attach ? "switchyard" : runnerConnectionName(config.runner.host, config.runner.port)
          })
          pool.on("error", () => undefined)
          return closeCancelledConnections(pool)
        }),
        (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
      )
      yield* Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(Effect.timeoutFail({
        duration: "10 seconds",
        onTimeout: () => new SqlError({ cause: new Error("timed out"), message: "PgClient: Connection timed out" })
      }))
      const client = yield* PgClient.fromPool({ acquire: Effect.succeed(pool) })
      return Context.make(PgClient.PgClient, client).pipe(
        Context.add(SqlClient.SqlClient, client),
        Context.add(PgPool, pool)
      )
    })
  ).pipe(Layer.provide(Reactivity.layer))

/**
 * The node's PostgreSQL: `DATABASE_URL` when set, otherwise an embedded server in SWITCHYARD_DATA_DIR
 * (started here and stopped when the layer is released, after everything that uses it).
 */
export const DatabaseLive = make(false)

/** For one-off commands: like DatabaseLive, but reuses the embedded server of a running node. */
export const DatabaseForCommandLive = make(true)
