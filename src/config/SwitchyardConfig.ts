import { Config, ConfigError, Context, Duration, Effect, Either, Layer, Option, Redacted } from "effect"
import { VisibilityMode } from "../../schema/Skills.js"
import { isHttpUrl } from "../support/HttpUrl.js"
import { parseModelPrices } from "./ModelPrices.js"

const env = (name: string) => `SWITCHYARD_${name}`

/**
 * A check of a value already read (after its default, or made optional): `Config.validate` there reports no
 * variable, so this names it.
 */
const check = <A>(name: string, message: string, ok: (a: A) => boolean) =>
  Config.mapOrFail((a: A) => ok(a) ? Either.right(a) : Either.left(ConfigError.InvalidData([name], message)))

const duration = (name: string, fallback: Duration.DurationInput) =>
  Config.duration(env(name)).pipe(Config.withDefault(Duration.decode(fallback)))

const port = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "must be a port number between 0 and 65535", validation: (p) => p >= 0 && p <= 65535 }),
    Config.withDefault(fallback)
  )

const positive = (name: string, fallback: number) =>
  Config.integer(env(name)).pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(fallback)
  )

/**
 * A rate limit: at most `max` counted attempts per `window` (SWITCHYARD_RATE_LIMIT_<NAME> and
 * SWITCHYARD_RATE_LIMIT_<NAME>_WINDOW). `max` 0 turns the limit off.
 */
const rateLimit = (name: string, max: number, window: Duration.DurationInput) =>
  Config.all({
    max: Config.integer(env(`RATE_LIMIT_${name}`)).pipe(
      Config.validate({ message: "must be 0 (off) or a positive integer", validation: (n) => n >= 0 }),
      Config.withDefault(max)
    ),
    window: duration(`RATE_LIMIT_${name}_WINDOW`, window).pipe(
      check(env(`RATE_LIMIT_${name}_WINDOW`), "must be at least 1 second", (d) => Duration.toMillis(d) >= 1000)
    )
  })

/** An optional variable set to "" (as `VAR=` in an env file does) counts as unset. */
const optional = <A>(config: Config.Config<A>, present: (a: A) => boolean) =>
  config.pipe(Config.option, Config.map(Option.filter(present)))

const nonEmpty = (r: Redacted.Redacted<string>) => Redacted.value(r).trim() !== ""

/** An optional absolute http(s) URL. */
const httpUrl = (name: string, message: string) =>
  optional(Config.string(name), (s) => s.trim() !== "").pipe(
    check(name, message, (url: Option.Option<string>) => Option.isNone(url) || isHttpUrl(url.value))
  )

const databaseUrl = optional(Config.redacted("DATABASE_URL"), nonEmpty).pipe(
  check(
    "DATABASE_URL",
    "must be a postgres:// or postgresql:// URL",
    Option.match({
      onNone: () => true,
      onSome: (r: Redacted.Redacted<string>) =>
        /^postgres(ql)?:\/\//.test(Redacted.value(r)) && URL.canParse(Redacted.value(r))
    })
  )
)

/** 32 bytes, base64 or hex: the key-encryption key for secrets at rest. */
const secretKey = optional(Config.redacted(env("SECRET_KEY")), nonEmpty).pipe(
  Config.mapOrFail(Option.match({
    onNone: () => Either.right(Option.none()),
    onSome: (r) => {
      const key = decodeSecretKey(Redacted.value(r))
      return key === undefined
        ? Either.left(
          ConfigError.InvalidData([env("SECRET_KEY")], "must be 32 bytes, base64 or hex (openssl rand -base64 32)")
        )
        : Either.right(Option.some(Redacted.make(key)))
    }
  }))
)

const DELAY_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `5s,1m,2h`: delays in milliseconds, or undefined when the text is not such a list. */
export const parseDelays = (text: string): ReadonlyArray<number> | undefined => {
  const parts = text.split(",").map((p) => p.trim())
  if (parts.length < 1 || parts.length > 20) return undefined
  const delays: Array<number> = []
  for (const part of parts) {
    const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(part)
    if (match === null) return undefined
    delays.push(Number(match[1]) * DELAY_UNITS[match[2]!]!)
  }
  return delays
}

export const decodeSecretKey = (text: string): Uint8Array | undefined => {
  const trimmed = text.trim()
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64")
  return bytes.length === 32 ? new Uint8Array(bytes) : undefined
}

export const config = Config.all({
  httpPort: port(env("HTTP_PORT"), 8080),
  host: Config.string(env("HOST")).pipe(Config.withDefault("127.0.0.1")),
  publicUrl: httpUrl(env("PUBLIC_URL"), "must be an absolute http(s) URL, e.g. https://switchyard.example.com"),
  databaseUrl,
  appUrl: httpUrl(env("APP_URL"), "must be an absolute http(s) URL: the origin that serves /oauth_login"),
  signInPages: Config.boolean(env("SIGN_IN_PAGES")).pipe(Config.withDefault(true)),
  mcpPublicUrl: httpUrl(env("MCP_PUBLIC_URL"), "must be an absolute http(s) URL, e.g. https://switchyard.example.com"),
  oauthAccessTokenTtl: duration("OAUTH_ACCESS_TOKEN_TTL", "1 hour"),
  oauthRefreshTokenTtl: duration("OAUTH_REFRESH_TOKEN_TTL", "30 days"),
  dataDir: Config.string(env("DATA_DIR")).pipe(Config.withDefault("./.switchyard")),
  embeddedPostgresPort: port(env("EMBEDDED_PG_PORT"), 0),
  secretKey,
  dbPoolSize: positive("DB_POOL_SIZE", 16),
  maxBodyBytes: positive("MAX_BODY_BYTES", 10 * 1024 * 1024),
  // a workspace file upload (POST /v1/files), streamed to storage: the one body the limit above leaves alone
  maxFileBytes: positive("MAX_FILE_BYTES", 100 * 1024 * 1024),
  apiKeyCacheTtl: duration("API_KEY_CACHE_TTL", "5 seconds"),
  egressAllow: Config.string(env("EGRESS_ALLOW")).pipe(Config.withDefault("")),
  connectorTimeout: duration("CONNECTOR_TIMEOUT", "300 seconds"),
  connectorCacheTtl: duration("CONNECTOR_CACHE_TTL", "5 seconds"),
  connectorFastPath: Config.boolean(env("CONNECTOR_FAST_PATH")).pipe(Config.withDefault(true)),
  taskFastPath: Config.boolean(env("TASK_FAST_PATH")).pipe(Config.withDefault(true)),
  // a long poll of a task another node runs is handed to that node (src/tasks/ShardDirectory.ts)
  forwardWaits: Config.boolean(env("FORWARD_WAITS")).pipe(Config.withDefault(true)),
  // where the other nodes reach this one's HTTP listener; default http://{RUNNER_HOST}:{HTTP_PORT}
  internalUrl: httpUrl(
    env("INTERNAL_URL"),
    "must be an absolute http(s) URL that the other nodes reach, e.g. http://10.0.0.12:8080"
  ),
  shutdownGrace: duration("SHUTDOWN_GRACE", "20 seconds"),
  // what shutdown does after the grace (shards handed back, pools closed) gets this long, then the process
  // exits with 1 (read by src/cli.ts's signal handler; here to be checked and listed)
  shutdownHardStop: duration("SHUTDOWN_HARD_STOP", "30 seconds"),
  taskTimeout: duration("TASK_TIMEOUT", "10 minutes"),
  readyStallAfter: duration("READY_STALL_AFTER", "30 seconds"),
  taskSweepInterval: duration("TASK_SWEEP_INTERVAL", "1 second"),
  // events older than this are pruned; a reader resuming before them is told (410 events_expired)
  eventRetention: duration("EVENT_RETENTION", "7 days").pipe(
    check(env("EVENT_RETENTION"), "must be at least 1 minute", (d) => Duration.toMillis(d) >= 60_000)
  ),
  // prices by model name over the built-in list prices (src/agents/Prices.ts)
  modelPrices: Config.string(env("MODEL_PRICES")).pipe(
    Config.withDefault(""),
    Config.mapOrFail((text) =>
      Either.mapLeft(parseModelPrices(text), (problem) => ConfigError.InvalidData([env("MODEL_PRICES")], problem))
    )
  ),
  // what a skill outside its visibility leads to (src/skills/Skills.ts); see docs/guides/skills.md
  skillVisibilityMode: Config.literal(...VisibilityMode.literals)("SERVICE_SKILL_VISIBILITY_MODE").pipe(
    Config.withDefault("report" as const)
  ),
  // webhooks (issue 22): the retry schedule after a failed attempt, each request's limit, requests in flight per
  // endpoint and node; see docs/guides/webhooks.md
  webhooks: Config.all({
    backoff: Config.string(env("WEBHOOK_BACKOFF")).pipe(
      Config.withDefault("5s,1m,5m,30m,2h,6h,12h"),
      Config.mapOrFail((text) => {
        const delays = parseDelays(text)
        return delays === undefined
          ? Either.left(ConfigError.InvalidData(
            [env("WEBHOOK_BACKOFF")],
            "must be a comma-separated list of 1-20 delays such as 5s,1m,2h (units ms, s, m, h, d)"
          ))
          : Either.right(delays)
      })
    ),
    timeout: duration("WEBHOOK_TIMEOUT", "15 seconds").pipe(
      check(env("WEBHOOK_TIMEOUT"), "must be at least 100 milliseconds", (d) => Duration.toMillis(d) >= 100)
    ),
    concurrency: positive("WEBHOOK_CONCURRENCY", 8)
  }),
  // schedules (issue 24): every node claims due schedules each poll; see docs/guides/schedules.md
  scheduler: Config.all({
    enabled: Config.boolean(env("SCHEDULER")).pipe(Config.withDefault(true)),
    pollInterval: duration("SCHEDULE_POLL_INTERVAL", "200 millis"),
    claimBatch: positive("SCHEDULE_CLAIM_BATCH", 500),
    staleAfter: duration("SCHEDULE_STALE_TICK", "10 seconds")
  }),
  // what fails counts (a correct API key never does; a correct password is taken back); see the README
  rateLimits: Config.all({
    passwordPerAccount: rateLimit("PASSWORD_ACCOUNT", 10, "15 minutes"),
    passwordPerIp: rateLimit("PASSWORD_IP", 100, "15 minutes"),
    apiKey: rateLimit("API_KEY", 20, "1 minute"),
    apiKeyPerIp: rateLimit("API_KEY_IP", 200, "1 minute"),
    registrationPerIp: rateLimit("REGISTRATION_IP", 20, "1 hour"),
    clientSecret: rateLimit("CLIENT_SECRET", 20, "1 minute")
  }),
  models: Config.all({
    openaiApiKey: optional(Config.redacted(env("OPENAI_API_KEY")), nonEmpty),
    openaiBaseUrl: Config.string(env("OPENAI_BASE_URL")).pipe(Config.withDefault("https://api.openai.com/v1")),
    chatApiKey: optional(Config.redacted(env("OPENAI_CHAT_API_KEY")), nonEmpty),
    chatBaseUrl: optional(Config.string(env("OPENAI_CHAT_BASE_URL")), (s) => s.trim() !== ""),
    anthropicApiKey: optional(Config.redacted(env("ANTHROPIC_API_KEY")), nonEmpty),
    anthropicBaseUrl: Config.string(env("ANTHROPIC_BASE_URL")).pipe(Config.withDefault("https://api.anthropic.com"))
  }),
  // observability (issue 23): Prometheus metrics on their own port, OpenTelemetry traces over OTLP/HTTP when the
  // standard OTEL_* variables say where; both off by default. See docs/guides/observability.md
  metrics: Config.all({
    port: optional(Config.string(env("METRICS_PORT")), (s) => s.trim() !== "").pipe(
      Config.mapOrFail(Option.match({
        onNone: () => Either.right(Option.none<number>()),
        onSome: (text) => {
          const n = Number(text.trim())
          return Number.isInteger(n) && n >= 0 && n <= 65535
            ? Either.right(Option.some(n))
            : Either.left(ConfigError.InvalidData([env("METRICS_PORT")], "must be a port number between 0 and 65535"))
        }
      }))
    ),
    host: optional(Config.string(env("METRICS_HOST")), (s) => s.trim() !== "")
  }),
  tracing: Config.all({
    endpoint: optional(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT"), (s) => s.trim() !== ""),
    tracesEndpoint: optional(Config.string("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), (s) => s.trim() !== ""),
    protocol: Config.literal("http/protobuf", "http/json")("OTEL_EXPORTER_OTLP_PROTOCOL").pipe(
      Config.withDefault("http/protobuf" as const)
    ),
    headers: Config.string("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault("")),
    serviceName: Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("switchyard")),
    resourceAttributes: Config.string("OTEL_RESOURCE_ATTRIBUTES").pipe(Config.withDefault("")),
    disabled: Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
    exportDelayMs: Config.integer("OTEL_BSP_SCHEDULE_DELAY").pipe(
      Config.validate({
        message: "must be between 1 and 60000 (milliseconds)",
        validation: (n) => n >= 1 && n <= 60_000
      }),
      Config.withDefault(5000)
    ),
    sampler: Config.literal(
      "always_on",
      "always_off",
      "traceidratio",
      "parentbased_always_on",
      "parentbased_always_off",
      "parentbased_traceidratio"
    )("OTEL_TRACES_SAMPLER").pipe(Config.withDefault("parentbased_always_on" as const)),
    samplerRatio: Config.number("OTEL_TRACES_SAMPLER_ARG").pipe(
      Config.validate({ message: "must be a ratio between 0 and 1", validation: (n) => n >= 0 && n <= 1 }),
      Config.withDefault(1)
    ),
    propagateUpstream: Config.boolean(env("TRACE_PROPAGATE_UPSTREAM")).pipe(Config.withDefault(false))
  }),
  bootstrapOnFirstStart: Config.boolean(env("BOOTSTRAP_ON_FIRST_START")).pipe(Config.withDefault(true)),
  bootstrapOrganization: Config.string(env("BOOTSTRAP_ORG")).pipe(Config.withDefault("Default organization")),
  bootstrapEmail: Config.string(env("BOOTSTRAP_EMAIL")).pipe(Config.withDefault("admin@localhost")),
  runner: Config.all({
    host: Config.string(env("RUNNER_HOST")).pipe(Config.withDefault("localhost")),
    port: port(env("RUNNER_PORT"), 34431),
    listenHost: Config.string(env("RUNNER_LISTEN_HOST")).pipe(Config.option)
  }),
  sharding: Config.all({
    shardsPerGroup: positive("SHARDS_PER_GROUP", 300),
    shardLockExpiration: duration("SHARD_LOCK_EXPIRATION", "4 seconds"),
    shardLockRefreshInterval: duration("SHARD_LOCK_REFRESH_INTERVAL", "1 second"),
    refreshAssignmentsInterval: duration("REFRESH_ASSIGNMENTS_INTERVAL", "1 second"),
    runnerHealthCheckInterval: duration("RUNNER_HEALTH_CHECK_INTERVAL", "2 seconds"),
    entityMessagePollInterval: duration("ENTITY_MESSAGE_POLL_INTERVAL", "1 second"),
    entityReplyPollInterval: duration("ENTITY_REPLY_POLL_INTERVAL", "200 millis")
  })
}).pipe(
  check(
    env("SHARD_LOCK_REFRESH_INTERVAL"),
    "must be shorter than SWITCHYARD_SHARD_LOCK_EXPIRATION",
    (c) => Duration.lessThan(c.sharding.shardLockRefreshInterval, c.sharding.shardLockExpiration)
  )
)

export type SwitchyardSettings = Config.Config.Success<typeof config> & {
  /** `{base_url}`: SWITCHYARD_PUBLIC_URL, else http://localhost:<port>. */
  readonly baseUrl: string
  /** Origin of the sign-in page `/oauth_login`: SWITCHYARD_APP_URL, else `baseUrl`. */
  readonly appBaseUrl: string
}

export class SwitchyardConfig
  extends Context.Tag("switchyard/SwitchyardConfig")<SwitchyardConfig, SwitchyardSettings>()
{
  static readonly layer = Layer.effect(
    SwitchyardConfig,
    Effect.map(config, (c) => {
      const baseUrl = Option.getOrElse(c.publicUrl, () => `http://localhost:${c.httpPort}`).replace(/\/+$/, "")
      return { ...c, baseUrl, appBaseUrl: Option.getOrElse(c.appUrl, () => baseUrl).replace(/\/+$/, "") }
    })
  )
}
