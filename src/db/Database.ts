import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import * as EmbeddedPostgres from "./EmbeddedPostgres.js"

const make = (attach: boolean) =>
  Layer.unwrapScoped(
    Effect.gen(function*() {
      const config = yield* SwitchyardConfig
      const url = yield* Option.match(config.databaseUrl, {
        onSome: Effect.succeed,
        onNone: () =>
          EmbeddedPostgres.make({ dataDir: config.dataDir, port: config.embeddedPostgresPort, attach }).pipe(
            Effect.map((pg) => pg.url)
          )
      })
      return PgClient.layer({
        url,
        maxConnections: config.dbPoolSize,
        // a node must notice a dead database instead of hanging on it
        connectTimeout: "10 seconds",
        idleTimeout: "60 seconds"
      })
    })
  )

/**
 * The node's PostgreSQL: `DATABASE_URL` when set, otherwise an embedded server in SWITCHYARD_DATA_DIR
 * (started here and stopped when the layer is released, after everything that uses it).
 */
export const DatabaseLive = make(false)

/** For one-off commands: like DatabaseLive, but reuses the embedded server of a running node. */
export const DatabaseForCommandLive = make(true)
