import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { SwitchyardConfig } from "../../src/config/SwitchyardConfig.js"
import { DatabaseForCommandLive } from "../../src/db/Database.js"
import { Identity } from "../../src/identity/Identity.js"

/**
 * What `switchyard bootstrap --json` prints, made in this process on the database of `env` (already migrated):
 * the same Identity.bootstrap the command runs, without a child process loading the whole app (~4 CPU-seconds
 * each). The command itself is tested in test/node/Cli.test.ts.
 */
export const bootstrapOrg = (env: Record<string, string>, organization: string, email: string) =>
  Effect.runPromise(
    Effect.flatMap(Identity, (identity) => identity.bootstrap({ organization, email })).pipe(
      Effect.provide(Identity.Default),
      Effect.provide(DatabaseForCommandLive.pipe(Layer.provideMerge(SwitchyardConfig.layer))),
      Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)),
      Effect.withConfigProvider(
        ConfigProvider.fromMap(new Map(Object.entries({ ...env, SWITCHYARD_DB_POOL_SIZE: "2" })))
      )
    )
  )
