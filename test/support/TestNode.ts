import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { ConfigProvider, Effect, type Exit, HashMap, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { Api } from "../../schema/Api.js"
import { Identity } from "../../src/identity/Identity.js"
import { NodeLive } from "../../src/Node.js"
import { freePort } from "./ports.js"
import { freshDatabase, migratedDatabase } from "./TestDatabase.js"

export interface TestNode {
  readonly baseUrl: string
  readonly databaseUrl: string
  /** A new organization with a Super admin; its key. */
  readonly bootstrap: (organization?: string) => Promise<{ organization_id: string; user_id: string; api_key: string }>
  /** Runs `f` with the contract's typed client, sending this key; the Exit tells success from typed errors. */
  readonly api: <A, E>(apiKey: string, f: (client: ApiClient) => Effect.Effect<A, E>) => Promise<Exit.Exit<A, E>>
  readonly fetch: (path: string, init?: RequestInit & { apiKey?: string }) => Promise<Response>
  readonly stop: () => Promise<void>
}

const makeClient = (baseUrl: string, apiKey: string) =>
  HttpApiClient.make(Api, {
    baseUrl,
    transformClient: HttpClient.mapRequest(HttpClientRequest.setHeader("x-api-key", apiKey))
  }).pipe(Effect.provide(FetchHttpClient.layer))

export type ApiClient = Effect.Effect.Success<ReturnType<typeof makeClient>>

const TEST_SECRET_KEY = Buffer.alloc(32, 7).toString("base64")

/** Environment of a node under test: its own database, free ports, quiet logs. */
export const testEnvironment = async (overrides: Record<string, string> = {}) => {
  const port = String(await freePort())
  return {
    DATABASE_URL: overrides["DATABASE_URL"] ?? await freshDatabase(),
    SWITCHYARD_SECRET_KEY: TEST_SECRET_KEY,
    SWITCHYARD_HTTP_PORT: port,
    SWITCHYARD_PUBLIC_URL: `http://127.0.0.1:${port}`,
    SWITCHYARD_RUNNER_PORT: String(await freePort()),
    SWITCHYARD_RUNNER_HOST: "127.0.0.1",
    SWITCHYARD_DB_POOL_SIZE: "6",
    SWITCHYARD_BOOTSTRAP_ON_FIRST_START: "false",
    ...overrides
  }
}

/** A log line of a node under test: its message and annotations. */
export interface LogLine {
  readonly message: unknown
  readonly annotations: Record<string, unknown>
}

/**
 * A whole node in this process: the same layers `switchyard serve` runs, on a real port. With `logs`, its
 * log lines from Info up land there instead of the console.
 */
/**
 * In-process nodes started and not stopped yet. Test files share their worker (vitest.config.ts), so a node a
 * file forgot would go on running (its loops, its pool) under the files after it: test/support/leftovers.ts
 * stops them at each file's end.
 */
export const liveNodes = new Map<string, () => Promise<void>>()

export const startTestNode = async (
  overrides: Record<string, string> = {},
  options: { readonly logs?: Array<LogLine> } = {}
): Promise<TestNode> => {
  // a port found free can be taken before the node listens on it (by any socket of a busy machine): then
  // again on other ports, unless the test chose them
  for (let attempt = 1;; attempt++) {
    try {
      return await startOnce(overrides, options)
    } catch (e) {
      const chosen = "SWITCHYARD_HTTP_PORT" in overrides || "SWITCHYARD_RUNNER_PORT" in overrides
      if (attempt >= 3 || chosen || !String(e).includes("ServeError")) throw e
    }
  }
}

const startOnce = async (
  overrides: Record<string, string>,
  options: { readonly logs?: Array<LogLine> }
): Promise<TestNode> => {
  // the database as a node's first start leaves it (migrating an empty one: globalSetup's template, which
  // runs every migration each run, the node process and CLI tests, test/db)
  const env = await testEnvironment({
    DATABASE_URL: overrides["DATABASE_URL"] ?? await migratedDatabase(),
    ...overrides
  })
  const baseUrl = `http://127.0.0.1:${env.SWITCHYARD_HTTP_PORT}`
  const config = Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
  const { logs } = options
  const logging = logs === undefined
    ? Logger.minimumLogLevel(LogLevel.Warning)
    : Layer.merge(
      Logger.minimumLogLevel(LogLevel.Info),
      Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ annotations, message }) =>
          void logs.push({ message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
        )
      )
    )
  const runtime = ManagedRuntime.make(
    Identity.Default.pipe(
      Layer.provideMerge(NodeLive),
      Layer.provide(config),
      Layer.provide(logging)
    )
  )
  await runtime.runPromise(Effect.void).catch(async (e) => {
    await runtime.dispose().catch(() => undefined)
    throw e
  })
  let count = 0
  liveNodes.set(baseUrl, () => runtime.dispose())
  return {
    baseUrl,
    databaseUrl: env.DATABASE_URL,
    bootstrap: (organization) =>
      runtime.runPromise(
        Effect.flatMap(Identity, (identity) =>
          identity.bootstrap({
            organization: organization ?? `Org ${++count}`,
            email: `admin-${Date.now()}-${count}-${Math.random().toString(36).slice(2, 8)}@example.com`
          }))
      ),
    api: (apiKey, f) => Effect.runPromiseExit(Effect.flatMap(makeClient(baseUrl, apiKey), f)),
    fetch: (path, init = {}) => {
      const { apiKey, ...rest } = init
      const headers = new Headers(rest.headers)
      if (apiKey !== undefined) headers.set("x-api-key", apiKey)
      return fetch(baseUrl + path, { ...rest, headers })
    },
    stop: () => {
      liveNodes.delete(baseUrl)
      return runtime.dispose()
    }
  }
}
