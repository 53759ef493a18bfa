import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Chunks with Chinese, Japanese or Korean text are indexed from `search_text`, the text cut into two-character
 * pieces (src/knowledge/CjkSegments.ts), so that words inside a sentence are found; null for other chunks,
 * which are indexed from `text` as before. Chunks written before this are cut here, in batches.
 */

// A frozen copy of `indexedText` as src/knowledge/CjkSegments.ts had it when this migration was released: a
// migration does the same on every database, whatever the application's cutting later becomes.
const RUN = "[\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\u3005\\u30fc]+"
const PUNCTUATION = "[\\u3000-\\u303f\\uff01-\\uff0f\\uff1a-\\uff20\\uff3b-\\uff40\\uff5b-\\uff65]"
const PARTS = new RegExp(`(${RUN})|${PUNCTUATION}`, "gu")
const ANY = new RegExp(`${RUN}|${PUNCTUATION}`, "u")

const bigrams = (run: string): Array<string> => {
  const chars = [...run]
  return chars.length <= 2 ? [run] : chars.slice(0, -1).map((c, i) => c + chars[i + 1])
}

/** The text as it is indexed: undefined when it has no CJK (the text itself is). */
const indexedText = (text: string): string | undefined =>
  ANY.test(text)
    ? text.replace(PARTS, (_, run?: string) => run === undefined ? " " : ` ${bigrams(run).join(" ")} `)
    : undefined

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE knowledge_chunks ADD COLUMN search_text text`
  yield* sql`ALTER TABLE knowledge_chunks DROP COLUMN tsv`
  yield* sql`
    ALTER TABLE knowledge_chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS (
      setweight(to_tsvector(language, headings), 'A') ||
      setweight(to_tsvector(language, coalesce(search_text, text)), 'B')
    ) STORED`
  yield* sql`CREATE INDEX knowledge_chunks_tsv ON knowledge_chunks USING gin (tsv)`
  // kana, CJK ideographs and Hangul syllables: the chunks worth a look (indexedText decides)
  const cjk = "[\\u3040-\\u30ff\\u3400-\\u9fff\\uf900-\\ufaff\\uac00-\\ud7af]"
  let after = "00000000-0000-0000-0000-000000000000"
  for (;;) {
    const rows = yield* sql<{ id: string; headings: string; text: string }>`
      SELECT id, headings, text FROM knowledge_chunks
      WHERE id > ${after}::uuid AND (text ~ ${cjk} OR headings ~ ${cjk})
      ORDER BY id LIMIT 500`
    if (rows.length === 0) break
    yield* sql`
      UPDATE knowledge_chunks c SET headings = r.headings, search_text = r.search_text
      FROM jsonb_to_recordset(${
      JSON.stringify(rows.map((r) => ({
        id: r.id,
        headings: indexedText(r.headings) ?? r.headings,
        search_text: indexedText(r.text) ?? null
      })))
    }::jsonb) AS r(id uuid, headings text, search_text text)
      WHERE c.id = r.id`
    after = rows[rows.length - 1]!.id
  }
})
