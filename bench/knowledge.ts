import * as Fs from "node:fs"
import * as Path from "node:path"
import pg from "pg"
import { postgresOf, startNode, stopAll, tempDir } from "./support/processes.js"
import { fmt, ratio, warnIfBusy } from "./support/report.js"
import { appendToList } from "./support/runs.js"

/**
 * Knowledge bases (issue 25), on one node with its embedded PostgreSQL:
 *   - ingest: 10,000 Markdown documents (~2 KiB each, ~20 MB) POSTed as inline text, 16 at a time; the time
 *     from the first POST until every document is `ready` (read, chunked, indexed by the node's workers),
 *     and docs/s. Baseline in the same run: the same documents' text inserted straight into a table with the
 *     same generated, GIN-indexed tsvector (one INSERT per document, 16 at a time, no HTTP, no chunking).
 *   - search: the base is filled to 100,000 chunks (the rest inserted through SQL: ready documents of one
 *     ~1,200-character chunk each, same vocabulary); then 300 searches (`POST …/search`, limit 10, one at a
 *     time) of 1–3 words drawn from the corpus's own Zipf-like vocabulary (some quoted phrases), and 300 of
 *     1–2 words drawn uniformly from it (selective): p50/p99 in ms, against the same query sent straight
 *     to PostgreSQL.
 * Appended to bench/results/knowledge.json. BENCH_KNOWLEDGE_DOCS / BENCH_KNOWLEDGE_CHUNKS scale it down.
 */
export const name = "knowledge"

const settings = {
  documents: Number(process.env["BENCH_KNOWLEDGE_DOCS"] ?? 10_000),
  documentBytes: 2048,
  searchChunks: Number(process.env["BENCH_KNOWLEDGE_CHUNKS"] ?? 100_000),
  concurrency: 16,
  searches: 300,
  limit: 10
} as const

// a deterministic vocabulary of English-like words, drawn Zipf-like (word i with weight 1/(i+1))
let seed = 42
const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32)
const syllables = ["ka", "lo", "mi", "ter", "an", "pro", "ver", "sel", "dun", "ra", "quo", "bel", "stro", "fin", "gal"]
const vocabulary = Array.from({ length: 6000 }, () => {
  let word = ""
  for (let s = 0, n = 2 + Math.floor(random() * 3); s < n; s++) {
    word += syllables[Math.floor(random() * syllables.length)]
  }
  return word
})
const cumulative: Array<number> = []
vocabulary.reduce((sum, _, i) => (cumulative[i] = sum + 1 / (i + 1)), 0)
const total = cumulative[cumulative.length - 1]!
const word = () => {
  const x = random() * total
  let lo = 0
  let hi = cumulative.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (cumulative[mid]! < x) lo = mid + 1
    else hi = mid
  }
  return vocabulary[lo]!
}
const sentence = () => {
  const words = Array.from({ length: 6 + Math.floor(random() * 10) }, word)
  return words.join(" ").replace(/^./, (c) => c.toUpperCase()) + "."
}

/** ~2 KiB of Markdown: a title, two sections of paragraphs. */
const documentText = (n: number) => {
  let text = `# Document ${n} ${word()}\n\n`
  let section = 0
  while (text.length < settings.documentBytes) {
    if (text.length > settings.documentBytes * section / 2) text += `## Section ${++section} ${word()}\n\n`
    text += Array.from({ length: 2 + Math.floor(random() * 3) }, sentence).join(" ") + "\n\n"
  }
  return text
}

const query = () => {
  const words = Array.from({ length: 1 + Math.floor(random() * 3) }, word)
  return random() < 0.2 ? `"${words.join(" ")}"` : words.join(" ")
}

const percentile = (xs: ReadonlyArray<number>, p: number) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** Runs `work(i)` for i in [from, to) with `concurrency` in flight. */
const pool = async (from: number, to: number, concurrency: number, work: (i: number) => Promise<void>) => {
  let next = from
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < to) await work(next++)
  }))
}

export const run = async () => {
  const load = warnIfBusy()
  const tmp = tempDir("bench-knowledge-")
  const dataDir = Path.join(tmp, "data")
  try {
    const node = await startNode({
      dataDir,
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true
    })
    const apiKey = node.apiKey!
    const db = new pg.Pool({
      ...postgresOf(dataDir),
      user: "postgres",
      database: "postgres",
      max: settings.concurrency
    })
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(node.baseUrl + path, {
        method,
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await response.text()
      if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`)
      return text === "" ? undefined : JSON.parse(text)
    }
    const count = async (sql: string, values: Array<unknown>) => Number((await db.query(sql, values)).rows[0].n)
    try {
      const base = await api("POST", "/v1/knowledge-bases", { name: "Bench", language: "english" })
      const texts = Array.from({ length: settings.documents }, (_, n) => documentText(n))
      const bytes = texts.reduce((sum, t) => sum + Buffer.byteLength(t), 0)

      // ingestion through the node
      const readyCount = () =>
        count("SELECT count(*) AS n FROM knowledge_documents WHERE knowledge_base_id = $1 AND status = 'ready'", [
          base.id
        ])
      const t0 = performance.now()
      await pool(0, settings.documents, settings.concurrency, async (n) => {
        await api("POST", `/v1/knowledge-bases/${base.id}/documents`, { name: `doc-${n}.md`, text: texts[n] })
      })
      const acceptedSeconds = (performance.now() - t0) / 1000
      while ((await readyCount()) < settings.documents) await new Promise((r) => setTimeout(r, 100))
      const ingestSeconds = (performance.now() - t0) / 1000
      const failed = await count(
        "SELECT count(*) AS n FROM knowledge_documents WHERE knowledge_base_id = $1 AND status = 'error'",
        [base.id]
      )
      const chunks = await count("SELECT count(*) AS n FROM knowledge_chunks WHERE knowledge_base_id = $1", [base.id])
      const docsPerSecond = settings.documents / ingestSeconds
      console.log(
        `  ingest: ${settings.documents} documents (${fmt(bytes / 1e6, 1)} MB, ${chunks} chunks) ready in ${
          fmt(ingestSeconds, 1)
        } s: ${fmt(docsPerSecond, 0)} docs/s (all accepted after ${fmt(acceptedSeconds, 1)} s)`
      )

      // baseline: the same text straight into an indexed tsvector table
      await db.query(`CREATE TABLE bench_texts (id serial PRIMARY KEY, text text NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED)`)
      await db.query("CREATE INDEX bench_texts_tsv ON bench_texts USING gin (tsv)")
      const b0 = performance.now()
      await pool(0, settings.documents, settings.concurrency, async (n) => {
        await db.query("INSERT INTO bench_texts (text) VALUES ($1)", [texts[n]])
      })
      const bareSeconds = (performance.now() - b0) / 1000
      const bareDocsPerSecond = settings.documents / bareSeconds
      console.log(
        `  baseline: the same documents straight into a GIN-indexed tsvector table: ${
          fmt(bareDocsPerSecond, 0)
        } docs/s; the node's ingestion is ${fmt(ratio(docsPerSecond, bareDocsPerSecond), 2)}x that`
      )

      // the base is filled to the chunks searched over straight through SQL (ingestion is measured above; at a
      // busy machine's tens of documents/s, 40,000 more through the API would take most of an hour): documents
      // marked ready, each with one ~1,200-character chunk of the same vocabulary, in the base's language
      const f0 = performance.now()
      let filled = 0
      while (chunks + filled < settings.searchChunks) {
        const batch = Math.min(1000, settings.searchChunks - chunks - filled)
        const rows = Array.from({ length: batch }, (_, i) => {
          let text = ""
          while (text.length < 1200) text += sentence() + " "
          return { n: settings.documents + filled + i, heading: `Section ${word()}`, text: text.trim() }
        })
        await db.query(
          `WITH r AS (SELECT gen_random_uuid() AS doc, gen_random_uuid() AS chunk, * FROM
             jsonb_to_recordset($2::jsonb) AS x(n int, heading text, text text)),
           d AS (INSERT INTO knowledge_documents (id, knowledge_base_id, organization_id, name, format, size,
               source_type, status, progress, chunk_count, created_by_key)
             SELECT r.doc, $1, b.organization_id, 'fill-' || r.n || '.md', 'md', length(r.text), 'text', 'ready', 1, 1,
               'bench' FROM r, knowledge_bases b WHERE b.id = $1)
           INSERT INTO knowledge_chunks (id, document_id, knowledge_base_id, chunk_index, heading_path, headings, text,
             language)
           SELECT r.chunk, r.doc, $1, 0, ARRAY[r.heading], r.heading, r.text, 'english'::regconfig FROM r`,
          [base.id, JSON.stringify(rows)]
        )
        filled += batch
      }
      const fillSeconds = (performance.now() - f0) / 1000
      const searchedChunks = await count(
        "SELECT count(*) AS n FROM knowledge_chunks WHERE knowledge_base_id = $1",
        [base.id]
      )
      console.log(`  filled to ${searchedChunks} chunks through SQL (${filled} more) in ${fmt(fillSeconds, 1)} s`)
      await db.query("VACUUM ANALYZE knowledge_chunks")

      // searches: through the API, and the same SQL straight to PostgreSQL; two query sets: words drawn as the
      // text draws them (the most common words are in nearly every chunk, so such a query ranks most of the
      // base), and words drawn uniformly from the vocabulary (mostly rarer words: selective queries)
      const bareSql = `SELECT c.id, ts_rank_cd(c.tsv, q) AS score FROM knowledge_chunks c,
        websearch_to_tsquery('english'::regconfig, $2) q WHERE c.knowledge_base_id = $1 AND c.tsv @@ q
        ORDER BY score DESC LIMIT ${settings.limit}`
      const measure = async (label: string, queries: ReadonlyArray<string>) => {
        for (const q of queries.slice(0, 20)) await api("POST", `/v1/knowledge-bases/${base.id}/search`, { query: q })
        const viaApi: Array<number> = []
        let hits = 0
        for (const q of queries) {
          const s0 = performance.now()
          const found = await api("POST", `/v1/knowledge-bases/${base.id}/search`, { query: q, limit: settings.limit })
          viaApi.push(performance.now() - s0)
          hits += found.items.length > 0 ? 1 : 0
        }
        const bare: Array<number> = []
        for (const q of queries) {
          const s0 = performance.now()
          await db.query(bareSql, [base.id, q])
          bare.push(performance.now() - s0)
        }
        const result = {
          p50Ms: percentile(viaApi, 50),
          p99Ms: percentile(viaApi, 99),
          bareP50Ms: percentile(bare, 50),
          bareP99Ms: percentile(bare, 99),
          queriesWithHits: hits / queries.length
        }
        console.log(
          `  search (${label}) over ${searchedChunks} chunks, ${queries.length} queries: p50 ${
            fmt(result.p50Ms, 2)
          } ms, p99 ${fmt(result.p99Ms, 2)} ms (bare SQL p50 ${fmt(result.bareP50Ms, 2)} ms, p99 ${
            fmt(result.bareP99Ms, 2)
          } ms: ${fmt(ratio(result.p50Ms, result.bareP50Ms), 2)}x / ${
            fmt(ratio(result.p99Ms, result.bareP99Ms), 2)
          }x); ${fmt(result.queriesWithHits * 100, 0)}% found something`
        )
        return result
      }
      const uniform = () => vocabulary[Math.floor(random() * vocabulary.length)]!
      const selectiveQuery = () => Array.from({ length: 1 + Math.floor(random() * 2) }, uniform).join(" ")
      const search = await measure("words as the text draws them", Array.from({ length: settings.searches }, query))
      const selective = await measure("uniform words", Array.from({ length: settings.searches }, selectiveQuery))
      appendToList(name, settings, {
        ok: failed === 0,
        loadBefore: load,
        ingest: {
          documents: settings.documents,
          megabytes: bytes / 1e6,
          chunks,
          seconds: ingestSeconds,
          docsPerSecond
        },
        ingestBaselineDocsPerSecond: bareDocsPerSecond,
        ingestRatio: ratio(docsPerSecond, bareDocsPerSecond),
        failedDocuments: failed,
        searchedChunks,
        search,
        searchP50Ratio: ratio(search.p50Ms, search.bareP50Ms),
        searchP99Ratio: ratio(search.p99Ms, search.bareP99Ms),
        selectiveSearch: selective
      })
      if (failed > 0) console.error(`  !!! ${failed} documents failed to ingest`)
      return { ok: failed === 0 }
    } finally {
      await db.end()
      await node.stop()
    }
  } finally {
    await stopAll()
    Fs.rmSync(tmp, { recursive: true, force: true })
  }
}
