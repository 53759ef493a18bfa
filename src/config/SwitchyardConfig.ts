import { Config, ConfigError, Context, Duration, Effect, Either, Layer, Option, Redacted } from "effect"
import * as Os from "node:os"
import { VisibilityMode } from "../../schema/Skills.js"
import { isHttpUrl } from "../support/HttpUrl.js"
import { parseModelPrices } from "./ModelPrices.js"
import * as Setting from "./Setting.js"
import { webhookBackoff } from "./WebhookBackoff.js"

const env = (name: string) => `SWITCHYARD_${name}`

const duration = (name: string, fallback: Duration.DurationInput) =>
  Setting.duration(env(name)).pipe(Config.withDefault(Duration.decode(fallback)))

const port = (name: string, fallback: number) =>
  Setting.integer(name).pipe(
    Config.validate({ message: "must be a port number between 0 and 65535", validation: (p) => p >= 0 && p <= 65535 }),
    Config.withDefault(fallback)
  )

const positive = (name: string, fallback: number) =>
  Setting.integer(env(name)).pipe(
    Config.validate({ message: "must be a positive integer", validation: (n) => n > 0 }),
    Config.withDefault(fallback)
  )

const countOrOff = (name: string, fallback: number) =>
  Setting.integer(name).pipe(
    Config.validate({ message: "must be 0 (off) or a positive integer", validation: (n) => n >= 0 }),
    Config.withDefault(fallback)
  )

const flag = (name: string, fallback: boolean) => Setting.boolean(name).pipe(Config.withDefault(fallback))

/**
 * A rate limit: at most `max` counted attempts per `window` (SWITCHYARD_RATE_LIMIT_<NAME> and
 * SWITCHYARD_RATE_LIMIT_<NAME>_WINDOW). `max` 0 turns the limit off.
 */
const rateLimit = (name: string, max: number, window: Duration.DurationInput) =>
  Config.all({
    max: countOrOff(env(`RATE_LIMIT_${name}`), max),
    window: duration(`RATE_LIMIT_${name}_WINDOW`, window).pipe(
      Setting.check(env(`RATE_LIMIT_${name}_WINDOW`), "must be at least 1 second", (d) => Duration.toMillis(d) >= 1000)
    )
  })

/** An optional absolute http(s) URL. */
const httpUrl = (name: string, message: string) =>
  Config.option(Setting.string(name)).pipe(
    Setting.check(name, message, (url: Option.Option<string>) => Option.isNone(url) || isHttpUrl(url.value))
  )

const databaseUrl = Config.option(Setting.redacted("DATABASE_URL")).pipe(
  Setting.check(
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
const secretKey = Config.option(Setting.redacted(env("SECRET_KEY"))).pipe(
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

export const decodeSecretKey = (text: string): Uint8Array | undefined => {
  const trimmed = text.trim()
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64")
  return bytes.length === 32 ? new Uint8Array(bytes) : undefined
}

/**
 * Every setting the node reads, checked before anything starts (a bad value is one line naming its variable). Each
 * is read through Setting, so an empty value is unset, whatever its kind.
 */
export const config = Config.all({
  httpPort: port(env("HTTP_PORT"), 8080),
  host: Setting.string(env("HOST")).pipe(Config.withDefault("127.0.0.1")),
  publicUrl: httpUrl(env("PUBLIC_URL"), "must be an absolute http(s) URL, e.g. https://switchyard.example.com"),
  databaseUrl,
  appUrl: httpUrl(env("APP_URL"), "must be an absolute http(s) URL: the origin that serves /oauth_login"),
  signInPages: flag(env("SIGN_IN_PAGES"), true),
  mcpPublicUrl: httpUrl(env("MCP_PUBLIC_URL"), "must be an absolute http(s) URL, e.g. https://switchyard.example.com"),
  oauthAccessTokenTtl: duration("OAUTH_ACCESS_TOKEN_TTL", "1 hour"),
  oauthRefreshTokenTtl: duration("OAUTH_REFRESH_TOKEN_TTL", "30 days"),
  dataDir: Setting.string(env("DATA_DIR")).pipe(Config.withDefault("./.switchyard")),
  embeddedPostgresPort: port(env("EMBEDDED_PG_PORT"), 0),
  secretKey,
  dbPoolSize: positive("DB_POOL_SIZE", 16),
  maxBodyBytes: positive("MAX_BODY_BYTES", 10 * 1024 * 1024),
  // a workspace file upload (POST /v1/files), streamed to storage: the one body the limit above leaves alone
  maxFileBytes: positive("MAX_FILE_BYTES", 100 * 1024 * 1024),
  // what one organization's workspace files may take in all (0: no limit); see docs/guides/files.md
  orgFileQuotaBytes: countOrOff(env("ORG_FILE_QUOTA_BYTES"), 10 * 1024 * 1024 * 1024),
  // behind a load balancer, the client is the last hop it appended to X-Forwarded-For (src/audit/AuditLog.ts)
  trustProxy: flag(env("TRUST_PROXY"), false),
  apiKeyCacheTtl: duration("API_KEY_CACHE_TTL", "5 seconds"),
  egressAllow: Setting.string(env("EGRESS_ALLOW")).pipe(Config.withDefault("")),
  connectorTimeout: duration("CONNECTOR_TIMEOUT", "300 seconds"),
  connectorCacheTtl: duration("CONNECTOR_CACHE_TTL", "5 seconds"),
  connectorFastPath: flag(env("CONNECTOR_FAST_PATH"), true),
  taskFastPath: flag(env("TASK_FAST_PATH"), true),
  // a long poll of a task another node runs is handed to that node (src/tasks/ShardDirectory.ts)
  forwardWaits: flag(env("FORWARD_WAITS"), true),
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
    Setting.check(env("EVENT_RETENTION"), "must be at least 1 minute", (d) => Duration.toMillis(d) >= 60_000)
  ),
  // prices by model name over the built-in list prices (src/agents/Prices.ts)
  modelPrices: Setting.string(env("MODEL_PRICES")).pipe(
    Config.withDefault(""),
    Config.mapOrFail((text) =>
      Either.mapLeft(parseModelPrices(text), (problem) => ConfigError.InvalidData([env("MODEL_PRICES")], problem))
    )
  ),
  // the built-in agent's model (src/builtin/BuiltinAgent.ts); none: the organization's provider default
  builtinAgentModel: Config.option(Setting.string(env("BUILTIN_AGENT_MODEL"))),
  // what a skill outside its visibility leads to (src/skills/Skills.ts); see docs/guides/skills.md
  skillVisibilityMode: Setting.literal(...VisibilityMode.literals)("SERVICE_SKILL_VISIBILITY_MODE").pipe(
    Config.withDefault("report" as const)
  ),
  // how long a tool call or a command waits for a person's decision (src/skills/Approvals.ts)
  approvalTimeout: duration("APPROVAL_TIMEOUT", "24 hours"),
  // knowledge bases: the largest document from any source, ingestion workers per node (0: none); see
  // docs/guides/knowledge-bases.md
  knowledge: Config.all({
    maxDocumentBytes: positive("MAX_DOCUMENT_BYTES", 25 * 1024 * 1024),
    workers: countOrOff(env("KNOWLEDGE_WORKERS"), 2),
    // reading one document (on a worker thread): past it the document fails extraction_failed
    extractionTimeout: duration("KNOWLEDGE_EXTRACTION_TIMEOUT", "5 minutes")
  }),
  // custom functions' sandbox threads per node (src/functions/SandboxPool.ts)
  functionWorkers: positive("FUNCTION_WORKERS", Math.max(2, Os.availableParallelism())),
  // webhooks (issue 22): the retry schedule after a failed attempt, each request's limit, requests in flight per
  // endpoint and node, endpoints per organization (0: no limit); see docs/guides/webhooks.md
  webhooks: Config.all({
    backoff: webhookBackoff(env("WEBHOOK_BACKOFF")),
    timeout: duration("WEBHOOK_TIMEOUT", "15 seconds").pipe(
      Setting.check(env("WEBHOOK_TIMEOUT"), "must be at least 100 milliseconds", (d) => Duration.toMillis(d) >= 100)
    ),
    concurrency: positive("WEBHOOK_CONCURRENCY", 8),
    maxEndpoints: countOrOff(env("WEBHOOK_MAX_ENDPOINTS"), 50)
  }),
  // schedules (issue 24): every node claims due schedules each poll; see docs/guides/schedules.md
  scheduler: Config.all({
    enabled: flag(env("SCHEDULER"), true),
    pollInterval: duration("SCHEDULE_POLL_INTERVAL", "1 second"),
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
    ssoStartPerIp: rateLimit("SSO_START_IP", 60, "15 minutes"),
    clientSecret: rateLimit("CLIENT_SECRET", 20, "1 minute")
  }),
  models: Config.all({
    openaiApiKey: Config.option(Setting.redacted(env("OPENAI_API_KEY"))),
    openaiBaseUrl: Setting.string(env("OPENAI_BASE_URL")).pipe(Config.withDefault("https://api.openai.com/v1")),
    chatApiKey: Config.option(Setting.redacted(env("OPENAI_CHAT_API_KEY"))),
    chatBaseUrl: Config.option(Setting.string(env("OPENAI_CHAT_BASE_URL"))),
    anthropicApiKey: Config.option(Setting.redacted(env("ANTHROPIC_API_KEY"))),
    anthropicBaseUrl: Setting.string(env("ANTHROPIC_BASE_URL")).pipe(Config.withDefault("https://api.anthropic.com"))
  }),
  // observability (issue 23): Prometheus metrics on their own port, OpenTelemetry traces over OTLP/HTTP when the
  // standard OTEL_* variables say where; both off by default. See docs/guides/observability.md
  metrics: Config.all({
    port: Config.option(Setting.string(env("METRICS_PORT"))).pipe(
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
    host: Config.option(Setting.string(env("METRICS_HOST")))
  }),
  tracing: Config.all({
    endpoint: Config.option(Setting.string("OTEL_EXPORTER_OTLP_ENDPOINT")),
    tracesEndpoint: Config.option(Setting.string("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")),
    protocol: Setting.literal("http/protobuf", "http/json")("OTEL_EXPORTER_OTLP_PROTOCOL").pipe(
      Config.withDefault("http/protobuf" as const)
    ),
    headers: Setting.string("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault("")),
    serviceName: Setting.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("switchyard")),
    resourceAttributes: Setting.string("OTEL_RESOURCE_ATTRIBUTES").pipe(Config.withDefault("")),
    disabled: flag("OTEL_SDK_DISABLED", false),
    exportDelayMs: Setting.integer("OTEL_BSP_SCHEDULE_DELAY").pipe(
      Config.validate({
        message: "must be between 1 and 60000 (milliseconds)",
        validation: (n) => n >= 1 && n <= 60_000
      }),
      Config.withDefault(5000)
    ),
    sampler: Setting.literal(
      "always_on",
      "always_off",
      "traceidratio",
      "parentbased_always_on",
      "parentbased_always_off",
      "parentbased_traceidratio"
    )("OTEL_TRACES_SAMPLER").pipe(Config.withDefault("parentbased_always_on" as const)),
    samplerRatio: Setting.number("OTEL_TRACES_SAMPLER_ARG").pipe(
      Config.validate({ message: "must be a ratio between 0 and 1", validation: (n) => n >= 0 && n <= 1 }),
      Config.withDefault(1)
    ),
    propagateUpstream: flag(env("TRACE_PROPAGATE_UPSTREAM"), false)
  }),
  bootstrapOnFirstStart: flag(env("BOOTSTRAP_ON_FIRST_START"), true),
  bootstrapOrganization: Setting.string(env("BOOTSTRAP_ORG")).pipe(Config.withDefault("Default organization")),
  bootstrapEmail: Setting.string(env("BOOTSTRAP_EMAIL")).pipe(Config.withDefault("admin@localhost")),
  runner: Config.all({
    host: Setting.string(env("RUNNER_HOST")).pipe(Config.withDefault("localhost")),
    port: port(env("RUNNER_PORT"), 34431),
    listenHost: Config.option(Setting.string(env("RUNNER_LISTEN_HOST")))
  }),
  sharding: Config.all({
    shardsPerGroup: positive("SHARDS_PER_GROUP", 300),
    shardLockExpiration: duration("SHARD_LOCK_EXPIRATION", "10 seconds"),
    shardLockRefreshInterval: duration("SHARD_LOCK_REFRESH_INTERVAL", "3 seconds"),
    refreshAssignmentsInterval: duration("REFRESH_ASSIGNMENTS_INTERVAL", "1 second"),
    runnerHealthCheckInterval: duration("RUNNER_HEALTH_CHECK_INTERVAL", "2 seconds"),
    entityMessagePollInterval: duration("ENTITY_MESSAGE_POLL_INTERVAL", "1 second"),
    entityReplyPollInterval: duration("ENTITY_REPLY_POLL_INTERVAL", "200 millis")
  }),
  /** A node silent this long (no shard-lock renewal) is hung: the others end its connections (RunnerConnections). */
  hungNodeAfter: duration("HUNG_NODE_AFTER", "15 seconds")
}).pipe(
  Setting.check(
    env("SHARD_LOCK_REFRESH_INTERVAL"),
    "must be shorter than SWITCHYARD_SHARD_LOCK_EXPIRATION",
    (c) => Duration.lessThan(c.sharding.shardLockRefreshInterval, c.sharding.shardLockExpiration)
  ),
  Setting.check(
    env("HUNG_NODE_AFTER"),
    "must be longer than SWITCHYARD_SHARD_LOCK_EXPIRATION",
    (c) => Duration.greaterThan(c.hungNodeAfter, c.sharding.shardLockExpiration)
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
