import * as Crypto from "node:crypto"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { searchedQuery } from "../../src/knowledge/CjkSegments.js"
import { freshDatabase, migrateBelow } from "../support/TestDatabase.js"

describe("migration 0036 re-indexes the Chinese, Japanese and Korean chunks already stored", () => {
  it("a word inside a sentence indexed before the upgrade is found after it; other chunks are left as they were", async () => {
    const databaseUrl = await freshDatabase()
    await migrateBelow(databaseUrl, 36)
    const org = Crypto.randomUUID()
    const base = Crypto.randomUUID()
    const doc = Crypto.randomUUID()
    const db = new pg.Client({ connectionString: databaseUrl })
    await db.connect()
    const found = async (query: string) =>
      (await db.query(
        `SELECT chunk_index FROM knowledge_chunks WHERE tsv @@ websearch_to_tsquery('english', $1) ORDER BY 1`,
        [query]
      )).rows.map((r) => r.chunk_index)
    try {
      await db.query(`INSERT INTO organizations (id, name) VALUES ($1, 'Old')`, [org])
      await db.query(
        `INSERT INTO knowledge_bases (id, organization_id, name, language, created_by_key) VALUES ($1, $2, 'KB', 'english', 'k')`,
        [base, org]
      )
      await db.query(
        `INSERT INTO knowledge_documents (id, knowledge_base_id, organization_id, name, format, size, source_type, status,
           created_by_key) VALUES ($1, $2, $3, 'd.md', 'md', 10, 'text', 'ready', 'k')`,
        [doc, base, org]
      )
      await db.query(
        `INSERT INTO knowledge_chunks (id, document_id, knowledge_base_id, chunk_index, heading_path, headings, text,
           language)
         VALUES (gen_random_uuid(), $1, $2, 0, '{会社案内}', '会社案内', '東京は日本の首都です。', 'english'),
           (gen_random_uuid(), $1, $2, 1, '{Travel}', 'Travel', 'Book trains for short trips.', 'english')`,
        [doc, base]
      )
      expect(await found("首都")).toEqual([])
      await migrateBelow(databaseUrl, Number.MAX_SAFE_INTEGER)
      expect(await found(searchedQuery("日本の首都"))).toEqual([0])
      expect(await found("会社")).toEqual([0])
      expect(await found("train")).toEqual([1])
      const { rows } = await db.query(`SELECT text, search_text FROM knowledge_chunks ORDER BY chunk_index`)
      expect(rows).toEqual([
        { text: "東京は日本の首都です。", search_text: " 東京 京は は日 日本 本の の首 首都 都で です  " },
        { text: "Book trains for short trips.", search_text: null }
      ])
    } finally {
      await db.end()
    }
  })
})
