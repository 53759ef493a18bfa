import { Effect, Exit, Redacted, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { TestProject } from "vitest/node"
import * as EmbeddedPostgres from "../../src/db/EmbeddedPostgres.js"

declare module "vitest" {
  export interface ProvidedContext {
    readonly databaseUrl: string
  }
}

/** One real PostgreSQL for the whole run (the same embedded server `npm start` uses). */
export default async function setup(project: TestProject) {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "switchyard-test-"))
  const scope = Effect.runSync(Scope.make())
  const pg = await Effect.runPromise(
    EmbeddedPostgres.make({
      dataDir,
      port: 0,
      // durability is not under test here; speed is welcome
      settings: { fsync: "off", synchronous_commit: "off", full_page_writes: "off", max_connections: "400" }
    }).pipe(Scope.extend(scope))
  )
  project.provide("databaseUrl", Redacted.value(pg.url))
  return async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    Fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
