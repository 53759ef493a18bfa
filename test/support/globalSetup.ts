import { ConfigProvider, Effect, Exit, Layer, Logger, LogLevel, Redacted, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"
import type { TestProject } from "vitest/node"
import { SwitchyardConfig } from "../../src/config/SwitchyardConfig.js"
import { DatabaseLive } from "../../src/db/Database.js"
import * as EmbeddedPostgres from "../../src/db/EmbeddedPostgres.js"
import { MigrationsLive } from "../../src/db/Migrations.js"
import { runBundleDirectory } from "../cli/bundle.js"

declare module "vitest" {
  export interface ProvidedContext {
    readonly databaseUrl: string
    /** A database with every migration applied (and nothing else), to copy: see migratedDatabase. */
    readonly migratedTemplate: string
    /** Where the run's compiled CLI goes (test/cli/bundle.ts), built by the first file that needs it. */
    readonly cliBundleDirectory: string
  }
}

const TEMPLATE = "switchyard_migrated"

/**
 * The template test nodes copy their database from: migrated once per run as a node migrates its database
 * at start (migrations and the cluster's tables), so each node's start finds nothing left to apply instead
 * of running every migration again (a second or two of each test node's start).
 */
const migrateTemplate = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${TEMPLATE}`)
  } finally {
    await client.end()
  }
  const templateUrl = new URL(url)
  templateUrl.pathname = `/${TEMPLATE}`
  const config = ConfigProvider.fromMap(
    new Map([["DATABASE_URL", templateUrl.toString()], [
      "SWITCHYARD_SECRET_KEY",
      Buffer.alloc(32, 7).toString("base64")
    ]])
  )
  await Effect.runPromise(
    Layer.build(MigrationsLive.pipe(
      Layer.provide(DatabaseLive),
      Layer.provide(SwitchyardConfig.layer),
      Layer.provide(Layer.setConfigProvider(config)),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
    )).pipe(Effect.scoped)
  )
}

const startPostgres = async () => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "switchyard-test-"))
  const scope = Effect.runSync(Scope.make())
  const server = await Effect.runPromise(
    EmbeddedPostgres.make({
      dataDir,
      port: 0,
      // durability is not under test here; speed is welcome
      settings: { fsync: "off", synchronous_commit: "off", full_page_writes: "off", max_connections: "400" }
    }).pipe(Scope.extend(scope))
  )
  await migrateTemplate(Redacted.value(server.url))
  return {
    url: Redacted.value(server.url),
    stop: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      Fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }
}

interface Shared {
  readonly server: ReturnType<typeof startPostgres>
  users: number
}

// every project of a run that lists this setup (vitest `projects`) shares the one server; the last stops it
const SHARED = Symbol.for("switchyard.test.postgres")
const registry = globalThis as { [SHARED]?: Shared }

/** One real PostgreSQL for the whole run (the same embedded server `npm start` uses). */
export default async function setup(project: TestProject) {
  const shared = registry[SHARED] ??= { server: startPostgres(), users: 0 }
  shared.users++
  const { url } = await shared.server
  project.provide("databaseUrl", url)
  project.provide("migratedTemplate", TEMPLATE)
  const cliBundle = runBundleDirectory()
  project.provide("cliBundleDirectory", cliBundle)
  return async () => {
    Fs.rmSync(cliBundle, { recursive: true, force: true })
    if (--shared.users > 0) return
    delete registry[SHARED]
    await (await shared.server).stop()
  }
}
