import { ConfigProvider, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import * as Crypto from "node:crypto"
import pg from "pg"
import { afterAll, beforeAll } from "vitest"
import { SwitchyardConfig } from "../../src/config/SwitchyardConfig.js"
import { DatabaseLive } from "../../src/db/Database.js"
import { MigrationsLive } from "../../src/db/Migrations.js"
import { EventLog } from "../../src/events/EventLog.js"
import { freshDatabase } from "../support/TestDatabase.js"

/** The event log on a fresh, migrated database, without a node around it. */
export const startEventLog = async (env: Record<string, string> = {}) => {
  const databaseUrl = await freshDatabase()
  const config = Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map(Object.entries({ DATABASE_URL: databaseUrl, SWITCHYARD_DB_POOL_SIZE: "8", ...env })))
  )
  const runtime = ManagedRuntime.make(
    EventLog.Default.pipe(
      Layer.provide(MigrationsLive),
      Layer.provideMerge(DatabaseLive),
      Layer.provideMerge(SwitchyardConfig.layer),
      Layer.provide(config),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
    )
  )
  await runtime.runPromise(EventLog)
  return { databaseUrl, runtime }
}

/** Inserts pending tasks (no agent needed: tasks have no foreign keys): one `task.created` event each. */
export const insertTasks = (client: pg.ClientBase | pg.Pool, organizationId: string, count: number) => {
  const ids = Array.from({ length: count }, () => Crypto.randomUUID())
  return client.query(
    `INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input)
     SELECT id, $2, $3, 'pending', 'api', 'u', 'u@example.com', 'hi' FROM unnest($1::uuid[]) AS id`,
    [ids, organizationId, Crypto.randomUUID()]
  ).then(() => ids)
}

/** Parses a text/event-stream body as it arrives; `onEvent` for each event, comments and `retry:` aside. */
export const readEventStream = async (
  response: Response,
  onEvent: (e: { id: string; event: string; data: string }) => boolean | void,
  onComment?: (text: string) => void
) => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return "ended" as const
      buffer += decoder.decode(value, { stream: true })
      let at: number
      while ((at = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, at)
        buffer = buffer.slice(at + 2)
        const fields: Record<string, string> = {}
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) onComment?.(line.slice(1).trim())
          const colon = line.indexOf(":")
          if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, "")
        }
        if (fields.data !== undefined) {
          const stop = onEvent({ id: fields.id ?? "", event: fields.event ?? "message", data: fields.data })
          if (stop === true) return "stopped" as const
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
}

/**
 * An event log on a fresh database, and a pool on it, for the tests of one file: started before them (handed
 * to `set`), closed after them.
 */
export const useEventLog = (
  set: (fixture: { log: Awaited<ReturnType<typeof startEventLog>>; pool: pg.Pool }) => void
) => {
  let fixture: { log: Awaited<ReturnType<typeof startEventLog>>; pool: pg.Pool } | undefined
  beforeAll(async () => {
    const log = await startEventLog()
    fixture = { log, pool: new pg.Pool({ connectionString: log.databaseUrl, max: 4 }) }
    set(fixture)
  })
  afterAll(async () => {
    await fixture?.pool.end()
    await fixture?.log.runtime.dispose()
  })
}
