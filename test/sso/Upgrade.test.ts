import * as Crypto from "node:crypto"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { freshDatabase, migrateBelow } from "../support/TestDatabase.js"

describe("migration 0047 records the client an identity was linked through", () => {
  it("links of the organization's present issuer get its present client; older providers' links get none", async () => {
    const databaseUrl = await freshDatabase()
    await migrateBelow(databaseUrl, 47)
    const org = Crypto.randomUUID()
    const user = Crypto.randomUUID()
    const db = new pg.Client({ connectionString: databaseUrl })
    await db.connect()
    try {
      await db.query(`INSERT INTO organizations (id, name) VALUES ($1, 'Old')`, [org])
      await db.query(`INSERT INTO users (id, email) VALUES ($1, 'ada@old.test')`, [user])
      await db.query(
        `INSERT INTO sso_settings (organization_id, issuer, client_id, client_secret, secret_key_version,
           allowed_email_domains, group_claim)
         VALUES ($1, 'https://now.test', 'app', '\\x00', 1, '["old.test"]', 'groups')`,
        [org]
      )
      await db.query(
        `INSERT INTO sso_identities (organization_id, issuer, subject, user_id)
         VALUES ($1, 'https://before.test', 'b', $2), ($1, 'https://now.test', 'n', $2)`,
        [org, user]
      )
      await migrateBelow(databaseUrl, Number.MAX_SAFE_INTEGER)
      const { rows } = await db.query(`SELECT issuer, subject, client_id FROM sso_identities ORDER BY issuer`)
      expect(rows).toEqual([
        { issuer: "https://before.test", subject: "b", client_id: null },
        { issuer: "https://now.test", subject: "n", client_id: "app" }
      ])
    } finally {
      await db.end()
    }
  })
})
