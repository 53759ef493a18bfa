import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { BadRequest, NotFound } from "../../schema/Errors.js"
import {
  type AddDocument,
  type CreateKnowledgeBase,
  type DocumentId,
  KnowledgeBase,
  type KnowledgeBaseId,
  KnowledgeDocument,
  type SearchKnowledge,
  type UpdateKnowledgeBase
} from "../../schema/KnowledgeBases.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { AuditLog, changedFields } from "../audit/AuditLog.js"
import { transactionIn } from "../db/Transaction.js"
import { requireOrganizationKey } from "../identity/IdentityPolicy.js"
import { pageOf, positionOf } from "../support/Cursor.js"
import { invalidField } from "../support/Issues.js"
import { isUuid } from "../support/Uuid.js"
import { DocumentSources } from "./DocumentSources.js"
import { Ingestion } from "./Ingestion.js"
import { KnowledgeIndex, PgKnowledgeIndexLive } from "./KnowledgeIndex.js"
import { type BaseRow, type DocumentRow, KnowledgeRepo } from "./KnowledgeRepo.js"

export const toBase = (row: BaseRow) =>
  new KnowledgeBase({
    id: row.id,
    name: row.name,
    description: row.description,
    language: row.language,
    document_count: row.document_count,
    created_at: row.created_at,
    updated_at: row.updated_at
  })

const toDocument = (row: DocumentRow) =>
  new KnowledgeDocument({
    id: row.id,
    knowledge_base_id: row.knowledge_base_id,
    name: row.name,
    format: row.format,
    size: Number(row.size),
    source: { type: row.source_type, file_id: row.source_file_id, url: row.source_url },
    status: row.status,
    progress: row.status === "ready" ? 1 : row.progress,
    chunk_count: row.chunk_count,
    error: row.status === "error"
      ? { reason: row.error_reason ?? "ingestion_failed", message: row.error_message ?? "" }
      : null,
    replaces: row.replaces,
    created_at: row.created_at,
    updated_at: row.updated_at
  })

/**
 * Knowledge bases (issue 25; docs/guides/knowledge-bases.md). Every member of the organization reads and
 * searches them; Builders and above create, change and delete bases and their documents, with keys not
 * limited to agents (a base is the organization's). Attaching a base to an agent takes a Builder who may use
 * that agent. Every change is audited. Another organization's ids are 404s.
 */
export class KnowledgeBases extends Effect.Service<KnowledgeBases>()("knowledge/KnowledgeBases", {
  effect: Effect.gen(function*() {
    const repo = yield* KnowledgeRepo
    const index = yield* KnowledgeIndex
    const audit = yield* AuditLog
    const transaction = transactionIn(yield* SqlClient.SqlClient)
    const sources = yield* DocumentSources
    const ingestion = yield* Ingestion
    let languages: ReadonlySet<string> | undefined

    const checkLanguage = (language: string) =>
      Effect.gen(function*() {
        languages ??= new Set(yield* repo.languages)
        if (languages.has(language)) return language
        return yield* BadRequest.of(
          `\`language\` '${language}' is not a text search configuration of this server; use one of: ${
            [...languages].join(", ")
          }.`,
          { issues: [{ path: "language", message: "unknown text search configuration" }], available: [...languages] },
          "invalid_language"
        )
      })

    const find = (principal: Principal, id: string, lock = false) =>
      Effect.gen(function*() {
        const row = isUuid(id) ? yield* repo.findBase(principal.organizationId, id as KnowledgeBaseId, lock) : undefined
        if (row === undefined) return yield* NotFound.of("Knowledge base", id)
        return row
      })

    /** The base without its document count, for requests about its documents. */
    const ref = (principal: Principal, id: string) =>
      Effect.gen(function*() {
        const row = isUuid(id) ? yield* repo.baseRef(principal.organizationId, id as KnowledgeBaseId) : undefined
        if (row === undefined) return yield* NotFound.of("Knowledge base", id)
        return row
      })

    const create = Effect.fn("KnowledgeBases.create")(function*(principal: Principal, input: CreateKnowledgeBase) {
      yield* requireOrganizationKey(principal, Policy.createKnowledgeBases)
      const language = yield* checkLanguage(input.language ?? "english")
      const row = yield* repo.insertBase({
        id: Crypto.randomUUID() as KnowledgeBaseId,
        organization_id: principal.organizationId,
        name: input.name,
        description: input.description ?? "",
        language,
        created_by: principal.userId,
        created_by_key: principal.keyId
      }).pipe(audit.recorded(principal, (row) => ({
        action: "CREATE_KNOWLEDGE_BASE",
        targets: [{ type: "knowledge_base", id: row.id, name: row.name }],
        details: { language: row.language }
      })))
      return toBase(row)
    })

    const list = Effect.fn("KnowledgeBases.list")(function*(principal: Principal, page: {
      readonly limit?: number | undefined
      readonly cursor?: string | undefined
    }) {
      const after = yield* positionOf(page.cursor)
      const limit = page.limit ?? 50
      const rows = yield* repo.listBases(principal.organizationId, after, limit + 1)
      return pageOf(rows, limit, (r) => r.created_at, toBase)
    })

    const get = (principal: Principal, id: string) => Effect.map(find(principal, id), toBase)

    const update = Effect.fn("KnowledgeBases.update")(
      function*(principal: Principal, id: string, input: UpdateKnowledgeBase) {
        yield* requireOrganizationKey(principal, Policy.changeKnowledgeBases)
        // the row locked from its read to its write: two PATCHes at once (a rename and a new language) each apply
        // to what the other wrote, rather than the later writing back what the earlier changed
        return yield* transaction(Effect.gen(function*() {
          const current = yield* find(principal, id, true)
          const change = {
            name: input.name ?? current.name,
            description: input.description ?? current.description,
            language: input.language === undefined ? current.language : yield* checkLanguage(input.language)
          }
          // nothing to change (`{}`, what it holds already): not written (`updated_at` stays), nothing audited
          if (
            change.name === current.name && change.description === current.description &&
            change.language === current.language
          ) return toBase(current)
          const row = yield* repo.updateBase(principal.organizationId, current.id, change).pipe(
            audit.recorded(principal, (row) =>
              row === undefined || changedFields(input).length === 0 ? undefined : {
                action: "UPDATE_KNOWLEDGE_BASE",
                targets: [{ type: "knowledge_base", id: row.id, name: row.name }],
                details: { changed: changedFields(input) }
              })
          )
          if (row === undefined) return yield* NotFound.of("Knowledge base", id)
          return toBase(row)
        }))
      }
    )

    const remove = Effect.fn("KnowledgeBases.remove")(function*(principal: Principal, id: string) {
      yield* requireOrganizationKey(principal, Policy.deleteKnowledgeBases)
      const current = yield* find(principal, id)
      const removed = yield* repo.deleteBase(principal.organizationId, current.id).pipe(
        audit.recorded(principal, (row) =>
          row === undefined ? undefined : {
            action: "DELETE_KNOWLEDGE_BASE",
            targets: [{ type: "knowledge_base", id: row.id, name: row.name }],
            details: { documents: current.document_count }
          })
      )
      if (removed === undefined) return yield* NotFound.of("Knowledge base", id)
    })

    const addDocument = Effect.fn("KnowledgeBases.addDocument")(
      function*(principal: Principal, baseId: string, input: AddDocument) {
        yield* requireOrganizationKey(principal, Policy.addDocuments)
        const base = yield* ref(principal, baseId)
        if (
          input.replaces !== undefined &&
          (yield* repo.findDocument(principal.organizationId, base.id, input.replaces)) === undefined
        ) {
          return yield* invalidField("replaces", "is no document of this knowledge base")
        }
        const source = yield* sources.of(principal, input)
        const row = yield* repo.insertDocument({
          id: Crypto.randomUUID() as DocumentId,
          knowledge_base_id: base.id,
          organization_id: principal.organizationId,
          name: input.name,
          format: source.format,
          size: source.size,
          source_type: source.type,
          source_file_id: source.fileId,
          source_url: source.url,
          replaces: input.replaces ?? null,
          created_by: principal.userId,
          created_by_key: principal.keyId
        }, source.bytes).pipe(audit.recorded(principal, (row) => ({
          action: "ADD_KNOWLEDGE_DOCUMENT",
          targets: [{ type: "knowledge_base", id: base.id, name: base.name }, {
            type: "knowledge_document",
            id: row.id,
            name: row.name
          }],
          details: {
            format: row.format,
            size: source.size,
            source: source.type,
            file_id: source.fileId,
            url: source.url,
            ...(input.replaces === undefined ? {} : { replaces: input.replaces })
          }
        })))
        yield* ingestion.wake
        return toDocument(row)
      }
    )

    const findDocument = (principal: Principal, baseId: string, id: string) =>
      Effect.gen(function*() {
        const base = yield* ref(principal, baseId)
        const row = isUuid(id)
          ? yield* repo.findDocument(principal.organizationId, base.id, id as DocumentId)
          : undefined
        if (row === undefined) return yield* NotFound.of("Document", id)
        return { base, row }
      })

    const listDocuments = Effect.fn("KnowledgeBases.listDocuments")(
      function*(principal: Principal, baseId: string, page: {
        readonly limit?: number | undefined
        readonly cursor?: string | undefined
      }) {
        const base = yield* ref(principal, baseId)
        const after = yield* seqOf(page.cursor)
        const limit = page.limit ?? 50
        const rows = yield* repo.listDocuments(base.id, after, limit + 1)
        const items = rows.slice(0, limit)
        const last = items[items.length - 1]
        return {
          items: items.map(toDocument),
          next_cursor: rows.length > limit && last !== undefined
            ? Buffer.from(JSON.stringify(["d", last.seq])).toString("base64url")
            : null
        }
      }
    )

    const getDocument = (principal: Principal, baseId: string, id: string) =>
      Effect.map(findDocument(principal, baseId, id), ({ row }) => toDocument(row))

    const removeDocument = Effect.fn("KnowledgeBases.removeDocument")(
      function*(principal: Principal, baseId: string, id: string) {
        yield* requireOrganizationKey(principal, Policy.deleteDocuments)
        const { base, row } = yield* findDocument(principal, baseId, id)
        const removed = yield* repo.deleteDocument(principal.organizationId, base.id, row.id).pipe(
          audit.recorded(principal, (removed) =>
            removed === undefined ? undefined : {
              action: "DELETE_KNOWLEDGE_DOCUMENT",
              targets: [{ type: "knowledge_base", id: base.id, name: base.name }, {
                type: "knowledge_document",
                id: row.id,
                name: row.name
              }],
              details: { status: row.status, chunks: row.chunk_count }
            })
        )
        if (removed === undefined) return yield* NotFound.of("Document", id)
      }
    )

    const search = Effect.fn("KnowledgeBases.search")(
      function*(principal: Principal, baseId: string, input: SearchKnowledge) {
        const base = yield* ref(principal, baseId)
        const items = yield* index.search({
          bases: [{ id: base.id, language: base.language }],
          query: input.query,
          limit: input.limit ?? 10
        })
        return { items }
      }
    )

    return {
      create,
      list,
      get,
      update,
      remove,
      addDocument,
      listDocuments,
      getDocument,
      removeDocument,
      search,
      find,
      ref
    } as const
  }),
  dependencies: [
    KnowledgeRepo.Default,
    PgKnowledgeIndexLive,
    AuditLog.Default,
    DocumentSources.Default,
    Ingestion.Default
  ]
}) {}

const seqOf = (cursor: string | undefined) => {
  if (cursor === undefined) return Effect.succeed(undefined)
  try {
    const [tag, seq] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    if (tag === "d" && typeof seq === "string" && /^\d{1,19}$/.test(seq)) return Effect.succeed(BigInt(seq))
  } catch {
    // not ours
  }
  return Effect.fail(
    BadRequest.of("`cursor` is not one this API returned; start again without it.", undefined, "invalid_cursor")
  )
}
