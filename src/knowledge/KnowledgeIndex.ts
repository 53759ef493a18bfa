import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer } from "effect"
import type { ChunkId, DocumentId, KnowledgeBaseId, SearchHit } from "../../schema/KnowledgeBases.js"
import { searchedQuery } from "./CjkSegments.js"

/** The bases one search covers, each with its text search language. */
export interface SearchScope {
  readonly bases: ReadonlyArray<{ readonly id: KnowledgeBaseId; readonly language: string }>
  readonly query: string
  readonly limit: number
}

/**
 * Where chunks are found: PostgreSQL full-text search today (PgKnowledgeIndexLive); a vector index can
 * answer the same call later (and the two be merged by rank), so callers know only `search`.
 * Storage failures are defects.
 */
export class KnowledgeIndex extends Context.Tag("knowledge/KnowledgeIndex")<KnowledgeIndex, {
  /** The best-matching chunks of ready documents, best first; a query of stop words only finds nothing. */
  readonly search: (scope: SearchScope) => Effect.Effect<ReadonlyArray<SearchHit>>
}>() {}

interface HitRow {
  readonly knowledge_base_id: KnowledgeBaseId
  readonly document_id: DocumentId
  readonly document_name: string
  readonly chunk_id: ChunkId
  readonly chunk_index: number
  readonly heading_path: ReadonlyArray<string>
  readonly score: number
  readonly snippet: string
  readonly text: string
}

const HEADLINE = "MaxFragments=2, MaxWords=30, MinWords=8, FragmentDelimiter=\" … \", StartSel=**, StopSel=**"

/**
 * Full-text search over `knowledge_chunks.tsv` (GIN) with `websearch_to_tsquery` in each base's language,
 * ranked by `ts_rank_cd` (headings weigh more than text: the column is weighted). `ts_headline` is costly, so
 * it runs only on the page of hits, after ranking. Bases of several languages are one query per language,
 * merged by score.
 */
export const PgKnowledgeIndexLive = Layer.effect(
  KnowledgeIndex,
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    const searchLanguage = (language: string, ids: ReadonlyArray<KnowledgeBaseId>, query: string, limit: number) =>
      sql<HitRow>`
        WITH q AS (SELECT websearch_to_tsquery(${language}::regconfig, ${searchedQuery(query)}) AS q),
        top AS (
          SELECT c.id, c.document_id, c.knowledge_base_id, c.chunk_index, c.heading_path, c.text, c.language,
            ts_rank_cd(c.tsv, q.q) AS score
          FROM knowledge_chunks c
          CROSS JOIN q
          JOIN knowledge_documents d ON d.id = c.document_id AND d.status = 'ready'
          WHERE c.knowledge_base_id = ANY(${`{${ids.join(",")}}`}::uuid[]) AND c.tsv @@ q.q
          ORDER BY score DESC, c.id
          LIMIT ${limit}
        )
        SELECT t.knowledge_base_id, t.document_id, d.name AS document_name, t.id AS chunk_id, t.chunk_index,
          t.heading_path, t.score::float8 AS score, ts_headline(t.language, t.text, q.q, ${HEADLINE}) AS snippet,
          t.text
        FROM top t CROSS JOIN q JOIN knowledge_documents d ON d.id = t.document_id
        ORDER BY t.score DESC, t.id`.pipe(Effect.orDie)

    const search = (scope: SearchScope) =>
      Effect.gen(function*() {
        const byLanguage = new Map<string, Array<KnowledgeBaseId>>()
        for (const base of scope.bases) {
          byLanguage.set(base.language, [...(byLanguage.get(base.language) ?? []), base.id])
        }
        const found = yield* Effect.forEach(
          byLanguage,
          ([language, ids]) => searchLanguage(language, ids, scope.query, scope.limit),
          { concurrency: 4 }
        )
        return found.flat()
          .sort((a, b) => b.score - a.score || (a.chunk_id < b.chunk_id ? -1 : 1))
          .slice(0, scope.limit)
          .map((row): SearchHit => ({ ...row, score: Number(row.score), heading_path: [...row.heading_path] }))
      }).pipe(Effect.withSpan("KnowledgeIndex.search", { captureStackTrace: false }))

    return { search }
  })
)
