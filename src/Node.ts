import { Effect, Layer, Option } from "effect"
import { ClusterRunnerLive } from "./cluster/ClusterRunner.js"
import { RunnerConnectionsLive } from "./cluster/RunnerConnections.js"
import { SecretKey } from "./config/SecretKey.js"
import { SecretKeyCheckLive } from "./config/SecretKeyCheck.js"
import { SwitchyardConfig } from "./config/SwitchyardConfig.js"
import { DatabaseLive } from "./db/Database.js"
import { MigrationsLive } from "./db/Migrations.js"
import { Drain } from "./http/Drain.js"
import { HttpServerLive } from "./http/HttpServerLive.js"
import { RouteTable } from "./http/RouteTable.js"
import { Identity } from "./identity/Identity.js"
import { MetricsEndpointLive } from "./observability/MetricsEndpoint.js"
import { ObservabilityLive } from "./observability/ObservabilityLive.js"

/** On an empty database: the default organization and its Super admin, whose key is printed once. */
const FirstStartLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const identity = yield* Identity
    const created = config.bootstrapOnFirstStart
      ? yield* identity.bootstrapIfEmpty({ organization: config.bootstrapOrganization, email: config.bootstrapEmail })
      : Option.none()
    const lines = [
      "",
      `  Switchyard is running.`,
      `  API      ${config.baseUrl}/v1`,
      `  Docs     ${config.baseUrl}/docs`,
      `  MCP      ${config.baseUrl}/mcp/`,
      `  Console  ${config.baseUrl}/console`,
      ...Option.match(created, {
        onNone: () => [],
        onSome: (b) => [
          "",
          `  First start: created "${config.bootstrapOrganization}" with Super admin ${config.bootstrapEmail}.`,
          `  Their API key (shown once, store it now):`,
          "",
          `    ${b.api_key}`,
          "",
          `  Try: curl -H 'x-api-key: ${b.api_key}' ${config.baseUrl}/v1/me`,
          `  The console signs in with a password: printf '%s' "$PW" | npx switchyard users set-password ` +
          `--email ${config.bootstrapEmail}`
        ]
      }),
      ""
    ]
    process.stdout.write(lines.join("\n") + "\n")
  })
).pipe(Layer.provide(Identity.Default))

/**
 * One Switchyard node. Build order (and so the reverse shutdown order): config, database, migrations, the
 * secret key's check against the database, cluster runner, HTTP, first-start banner. Shutdown drains HTTP,
 * hands shards back, then stops the embedded database.
 */
export const NodeLive = FirstStartLive.pipe(
  Layer.provide(HttpServerLive),
  Layer.provide(MetricsEndpointLive),
  Layer.provide(RunnerConnectionsLive),
  Layer.provideMerge(ClusterRunnerLive),
  Layer.provide(SecretKeyCheckLive),
  Layer.provide(MigrationsLive),
  Layer.provide(SecretKey.layer),
  Layer.provideMerge(DatabaseLive),
  Layer.provide(Drain.Default),
  Layer.provideMerge(ObservabilityLive),
  Layer.provide(RouteTable.Default),
  Layer.provideMerge(SwitchyardConfig.layer)
)
