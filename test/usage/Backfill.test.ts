import * as Crypto from "node:crypto"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { freshDatabase, migrateBelow } from "../support/TestDatabase.js"
import { adminOf, startUsageOn } from "./support.js"

describe("migration 0020 backfills the usage already stored", () => {
  it("tasks, model calls and connector calls written before the upgrade are in the report after it", async () => {
    const databaseUrl = await freshDatabase()
    await migrateBelow(databaseUrl, 20)
    const org = Crypto.randomUUID()
    const agent = Crypto.randomUUID()
    const task = Crypto.randomUUID()
    const db = new pg.Client({ connectionString: databaseUrl })
    await db.connect()
    try {
      await db.query(
        `INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input, created_at,
           finished_at)
         VALUES ($1, $2, $3, 'completed', 'mcp', 'ada', 'ada@example.com', 'hi', '2026-01-05T10:00:00Z',
           '2026-01-05T10:00:02Z'),
           (gen_random_uuid(), $2, $3, 'executing', 'api', 'ada', 'ada@example.com', 'hi', '2026-01-05T10:00:00Z', NULL)`,
        [task, org, agent]
      )
      await db.query(
        `INSERT INTO llm_usage (task_id, seq, organization_id, agent_id, provider, model, input_tokens, output_tokens,
           cached_tokens, cost_usd, at)
         VALUES ($1, 1, $2, $3, 'openai', 'gpt-4o', 100, 10, 5, 0.25, '2026-01-05T10:00:01Z'),
           ($1, 2, $2, $3, 'openai', 'gpt-4o', 200, 20, 0, 0.5, '2026-01-05T10:00:02Z')`,
        [task, org, agent]
      )
      await db.query(
        `INSERT INTO connector_invocations (organization_id, connector_id, connection_id, operation_id, task_id, status,
           duration_ms, request_bytes, created_at)
         VALUES ($1, gen_random_uuid(), gen_random_uuid(), 'op', $2, 404, 5, 0, '2026-01-05T10:00:01Z')`,
        [org, task]
      )
    } finally {
      await db.end()
    }
    const usage = await startUsageOn(databaseUrl)
    try {
      const report = await usage.report(adminOf(org), {
        from: new Date("2026-01-01T00:00:00Z"),
        to: new Date("2026-02-01T00:00:00Z"),
        group_by: "user,source"
      })
      expect(report.rows).toEqual([
        expect.objectContaining({
          bucket_start: new Date("2026-01-05T00:00:00Z"),
          user_id: "ada",
          source: "mcp",
          model_calls: 2,
          input_tokens: 300,
          output_tokens: 30,
          cached_tokens: 5,
          cost_usd: 0.75,
          tasks_completed: 1,
          connector_calls_4xx: 1
        })
      ])
      // by hour too
      const hours = await usage.report(adminOf(org), {
        from: new Date("2026-01-05T00:00:00Z"),
        to: new Date("2026-01-06T00:00:00Z"),
        bucket: "hour"
      })
      expect(hours.rows.map((r) => [r.bucket_start.toISOString(), r.input_tokens])).toEqual([
        ["2026-01-05T10:00:00.000Z", 300]
      ])
    } finally {
      await usage.stop()
    }
  })
})
