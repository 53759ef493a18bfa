import { Schema } from "effect"
import { FileId } from "./Files.js"
import { uuidId } from "./Ids.js"
import { IntegerParam } from "./QueryParams.js"
import { requestBody } from "./RequestBody.js"
import { Timestamp } from "./Timestamp.js"

export const KnowledgeBaseId = uuidId("KnowledgeBaseId", "a knowledge base", "Identifier of a knowledge base (UUID).")
export type KnowledgeBaseId = typeof KnowledgeBaseId.Type

export const DocumentId = uuidId(
  "KnowledgeDocumentId",
  "a document of a knowledge base",
  "Identifier of a document of a knowledge base (UUID)."
)
export type DocumentId = typeof DocumentId.Type

export const ChunkId = uuidId(
  "KnowledgeChunkId",
  "one chunk (passage) of a document",
  "Identifier of one chunk (passage) of a document (UUID); stable until the document is deleted."
)
export type ChunkId = typeof ChunkId.Type

const Name = Schema.Trim.pipe(Schema.minLength(1), Schema.maxLength(200))

export const Language = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9_]{0,62}$/),
  Schema.annotations({
    identifier: "TextSearchLanguage",
    description: "A PostgreSQL text search configuration: `english`, `simple` (no stemming, no stop words), " +
      "`german`, `french`, `spanish`, … (400 `invalid_language` lists those the server has). Default `english`."
  })
)

export class KnowledgeBase extends Schema.Class<KnowledgeBase>("KnowledgeBase")({
  id: KnowledgeBaseId,
  name: Schema.String,
  description: Schema.String,
  language: Schema.String.annotations({ description: "Its text search configuration (stemming, stop words)." }),
  document_count: Schema.NonNegativeInt.annotations({ description: "Documents in it, whatever their status." }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const CreateKnowledgeBase = Schema.Struct({
  name: Name.annotations({ description: "Unique in the organization (case-insensitively), 1–200 characters." }),
  description: Schema.optional(Schema.String.pipe(Schema.maxLength(2000))).annotations({
    description: "What it holds; agents see it in their `search_knowledge` tool's description."
  }),
  language: Schema.optional(Language)
}).annotations({ identifier: "CreateKnowledgeBase", ...requestBody })
export type CreateKnowledgeBase = typeof CreateKnowledgeBase.Type

export const UpdateKnowledgeBase = Schema.Struct({
  name: Schema.optional(Name),
  description: Schema.optional(Schema.String.pipe(Schema.maxLength(2000))),
  language: Schema.optional(Language).annotations({
    description: "Changing it re-indexes every chunk of the base in the same request."
  })
}).annotations({ identifier: "UpdateKnowledgeBase", ...requestBody })
export type UpdateKnowledgeBase = typeof UpdateKnowledgeBase.Type

export const KnowledgeBasePage = Schema.Struct({
  items: Schema.Array(KnowledgeBase),
  next_cursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "KnowledgeBasePage" })

export const PageParams = Schema.Struct({
  limit: Schema.optional(IntegerParam(1, 200)).annotations({
    description: "Page size, 1–200 (default 50)."
  }),
  cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })
})

export const DocumentFormat = Schema.Literal("txt", "md", "html", "pdf").annotations({
  description: "How the text is read: plain text, Markdown (headings make sections), HTML (its text, headings " +
    "kept) or PDF (each page's text)."
})
export type DocumentFormat = typeof DocumentFormat.Type

const DocumentName = Schema.Trim.pipe(Schema.minLength(1), Schema.maxLength(1024)).annotations({
  description: "The document's name, cited in search results (e.g. `handbook/leave.md`)."
})

export const AddDocument = Schema.Struct({
  name: DocumentName,
  text: Schema.optional(Schema.String.pipe(Schema.minLength(1))).annotations({
    description: "Source 1: the document itself, inline."
  }),
  file_id: Schema.optional(FileId).annotations({
    description: "Source 2: a workspace file you may read (`POST /v1/files`); its type from its Content-Type or " +
      "extension."
  }),
  url: Schema.optional(Schema.String.pipe(Schema.maxLength(2048))).annotations({
    description: "Source 3: an http(s) URL, fetched once, now, through the egress guard (internal addresses " +
      "refused; at most 5 redirects, each checked); its type from the answer's Content-Type."
  }),
  format: Schema.optional(DocumentFormat).annotations({
    description: "Overrides the type: default from the Content-Type, else the name's extension (`.md`, " +
      "`.html`/`.htm`, `.pdf`, `.txt`); inline text is `txt` unless the name says otherwise."
  }),
  replaces: Schema.optional(DocumentId).annotations({
    description: "A document of this base that this one is a new version of: it is deleted when this one is " +
      "ready (search answers from the old one until then), and stays if this one fails."
  })
}).annotations({
  identifier: "AddDocument",
  description: "A name and exactly one source: `text`, `file_id` or `url`.",
  ...requestBody
})
export type AddDocument = typeof AddDocument.Type

export const DocumentStatus = Schema.Literal("processing", "ready", "error").annotations({
  description: "`processing`: queued or being read and indexed; `ready`: searchable; `error`: see `error`."
})

export const DocumentSource = Schema.Struct({
  type: Schema.Literal("text", "file", "url"),
  file_id: Schema.NullOr(Schema.String),
  url: Schema.NullOr(Schema.String)
}).annotations({ identifier: "KnowledgeDocumentSource" })

export class KnowledgeDocument extends Schema.Class<KnowledgeDocument>("KnowledgeDocument")({
  id: DocumentId,
  knowledge_base_id: KnowledgeBaseId,
  name: Schema.String,
  format: DocumentFormat,
  size: Schema.NonNegativeInt.annotations({ description: "Bytes of the source as received." }),
  source: DocumentSource,
  status: DocumentStatus,
  progress: Schema.Number.annotations({ description: "0 to 1: how far ingestion has come (1 when ready)." }),
  chunk_count: Schema.NonNegativeInt.annotations({ description: "Chunks indexed so far." }),
  error: Schema.NullOr(Schema.Struct({
    reason: Schema.String.annotations({
      description: "`extraction_failed` (not readable as its format), `no_text` (nothing to index), `file_gone` " +
        "(the workspace file was deleted first) or `ingestion_failed` (three attempts failed)."
    }),
    message: Schema.String
  })).annotations({ description: "Why ingestion failed, when `status` is `error`." }),
  replaces: Schema.NullOr(Schema.String).annotations({
    description: "The document this one replaces when it is ready (null: none)."
  }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const DocumentPage = Schema.Struct({
  items: Schema.Array(KnowledgeDocument),
  next_cursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "KnowledgeDocumentPage" })

export const SearchKnowledge = Schema.Struct({
  query: Schema.Trim.pipe(Schema.minLength(1), Schema.maxLength(1000)).annotations({
    description: "Web-search syntax: words, `\"a phrase\"`, `or`, `-word`."
  }),
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 50))).annotations({
    description: "Most chunks to return, 1–50 (default 10)."
  })
}).annotations({ identifier: "SearchKnowledge", ...requestBody })
export type SearchKnowledge = typeof SearchKnowledge.Type

export const SearchHit = Schema.Struct({
  knowledge_base_id: KnowledgeBaseId,
  document_id: DocumentId,
  document_name: Schema.String,
  chunk_id: ChunkId,
  chunk_index: Schema.NonNegativeInt.annotations({ description: "The chunk's place in its document, from 0." }),
  heading_path: Schema.Array(Schema.String).annotations({
    description: "The headings the chunk is under, outermost first (a PDF's: `Page N`)."
  }),
  score: Schema.Number.annotations({
    description: "Relevance (ts_rank_cd), higher is better; comparable within one search."
  }),
  snippet: Schema.String.annotations({ description: "The best-matching fragments, matches in `**…**`." }),
  text: Schema.String.annotations({ description: "The whole chunk." })
}).annotations({ identifier: "KnowledgeSearchHit" })
export type SearchHit = typeof SearchHit.Type

export const SearchResults = Schema.Struct({
  items: Schema.Array(SearchHit)
}).annotations({ identifier: "KnowledgeSearchResults" })
