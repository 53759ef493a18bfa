import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  BadRequestWire,
  ConflictWire,
  ForbiddenWire,
  NotFoundWire,
  PayloadTooLargeWire,
  UnprocessableWire,
  UnsupportedMediaTypeWire
} from "./Errors.js"
import { AgentId } from "./Ids.js"
import {
  AddDocument,
  CreateKnowledgeBase,
  DocumentId,
  DocumentPage,
  KnowledgeBase,
  KnowledgeBaseId,
  KnowledgeBasePage,
  KnowledgeDocument,
  PageParams,
  SearchKnowledge,
  SearchResults,
  UpdateKnowledgeBase
} from "./KnowledgeBases.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { Authentication } from "./Security.js"

// ids as plain strings in paths: a malformed one is a 404 like an unknown one, and never leaks which exist
const BasePath = Schema.Struct({ knowledge_base_id: KnowledgeBaseId })
const DocumentPath = Schema.Struct({ knowledge_base_id: KnowledgeBaseId, document_id: DocumentId })
const AttachmentPath = Schema.Struct({ agent_id: AgentId, knowledge_base_id: KnowledgeBaseId })

export class KnowledgeBasesApi extends HttpApiGroup.make("knowledgeBases")
  .add(
    HttpApiEndpoint.get("listKnowledgeBases", "/knowledge-bases")
      .setUrlParams(PageParams)
      .addSuccess(KnowledgeBasePage)
      .annotate(OpenApi.Description, "The organization's knowledge bases, oldest first (every member reads them).")
      .annotateContext(
        operation({ summary: "List knowledge bases", permission: Policy.anyMember, errors: ["invalid_cursor"] })
      )
  )
  .add(
    HttpApiEndpoint.post("createKnowledgeBase", "/knowledge-bases")
      .setPayload(CreateKnowledgeBase)
      .addSuccess(KnowledgeBase, { status: 201 })
      .annotate(
        OpenApi.Description,
        "Create a knowledge base (Builder+, a key not limited to agents). 400 `invalid_language` for a language " +
          "that is no text search configuration; 409 `knowledge_base_name_taken`. Audited."
      )
      .annotateContext(
        operation({
          summary: "Create a knowledge base",
          permission: Policy.createKnowledgeBases,
          access: "A key limited to agents may not: a base is the organization's.",
          errors: ["invalid_language", "knowledge_base_name_taken"]
        })
      )
  )
  .add(
    HttpApiEndpoint.get("getKnowledgeBase", "/knowledge-bases/:knowledge_base_id").setPath(BasePath).addSuccess(
      KnowledgeBase
    )
      .annotateContext(operation({ summary: "Get a knowledge base", permission: Policy.anyMember, errors: [] }))
  )
  .add(
    HttpApiEndpoint.patch("updateKnowledgeBase", "/knowledge-bases/:knowledge_base_id")
      .setPath(BasePath)
      .setPayload(UpdateKnowledgeBase)
      .addSuccess(KnowledgeBase)
      .annotate(OpenApi.Description, "Change a knowledge base (Builder+). A new language re-indexes it. Audited.")
      .annotateContext(
        operation({
          summary: "Change a knowledge base",
          permission: Policy.changeKnowledgeBases,
          access: "A key limited to agents may not: a base is the organization's.",
          errors: ["invalid_language", "knowledge_base_name_taken"]
        })
      )
  )
  .add(
    HttpApiEndpoint.del("deleteKnowledgeBase", "/knowledge-bases/:knowledge_base_id")
      .setPath(BasePath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(
        OpenApi.Description,
        "Delete a knowledge base with its documents (Builder+); agents it was attached to stop searching it. Audited."
      )
      .annotateContext(
        operation({
          summary: "Delete a knowledge base",
          permission: Policy.deleteKnowledgeBases,
          errors: [],
          access: "A key limited to agents may not: a base is the organization's."
        })
      )
  )
  .add(
    HttpApiEndpoint.post("addKnowledgeDocument", "/knowledge-bases/:knowledge_base_id/documents")
      .setPath(BasePath)
      .setPayload(AddDocument)
      .addSuccess(KnowledgeDocument, { status: 202 })
      .addError(PayloadTooLargeWire)
      .addError(UnsupportedMediaTypeWire)
      .addError(UnprocessableWire)
      .annotate(
        OpenApi.Description,
        "Add a document (Builder+): `{name, text}`, `{name, file_id}` or `{name, url}`. Answers 202 with the " +
          "document `processing`; it is read, chunked and indexed in the background (poll it for `status`, " +
          "`progress`). 413 `document_too_large`, 415 `unsupported_document_type`, 400 `unknown_file`, 422 " +
          "`document_url_not_allowed` (egress guard) or `document_url_unreachable`. Audited."
      )
      .annotateContext(operation({
        summary: "Add a document to a knowledge base",
        permission: Policy.addDocuments,
        access: "A key limited to agents may not: a base is the organization's.",
        errors: [
          "unknown_file",
          "document_too_large",
          "unsupported_document_type",
          "document_url_not_allowed",
          "document_url_unreachable"
        ]
      }))
  )
  .add(
    HttpApiEndpoint.get("listKnowledgeDocuments", "/knowledge-bases/:knowledge_base_id/documents")
      .setPath(BasePath)
      .setUrlParams(PageParams)
      .addSuccess(DocumentPage)
      .annotate(OpenApi.Description, "The base's documents in the order they were added, with their status.")
      .annotateContext(
        operation({
          summary: "List a knowledge base's documents",
          permission: Policy.anyMember,
          errors: ["invalid_cursor"]
        })
      )
  )
  .add(
    HttpApiEndpoint.get("getKnowledgeDocument", "/knowledge-bases/:knowledge_base_id/documents/:document_id")
      .setPath(DocumentPath)
      .addSuccess(KnowledgeDocument)
      .annotate(OpenApi.Description, "A document: `status` (processing, ready, error with `error`) and `progress`.")
      .annotateContext(operation({ summary: "Get a knowledge document", permission: Policy.anyMember, errors: [] }))
  )
  .add(
    HttpApiEndpoint.del("deleteKnowledgeDocument", "/knowledge-bases/:knowledge_base_id/documents/:document_id")
      .setPath(DocumentPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(
        OpenApi.Description,
        "Delete a document and its chunks (Builder+), even while it is processed. Audited."
      )
      .annotateContext(
        operation({
          summary: "Delete a knowledge document",
          permission: Policy.deleteDocuments,
          errors: [],
          access: "A key limited to agents may not: a base is the organization's."
        })
      )
  )
  .add(
    HttpApiEndpoint.post("searchKnowledgeBase", "/knowledge-bases/:knowledge_base_id/search")
      .setPath(BasePath)
      .setPayload(SearchKnowledge)
      .addSuccess(SearchResults)
      .annotate(
        OpenApi.Description,
        "Full-text search of the base's ready documents (web-search syntax, in the base's language): the best " +
          "chunks with their document, score and a snippet."
      )
      .annotateContext(operation({ summary: "Search a knowledge base", permission: Policy.anyMember, errors: [] }))
  )
  .add(
    HttpApiEndpoint.get("listAgentKnowledgeBases", "/agents/:agent_id/knowledge-bases")
      .setPath(Schema.Struct({ agent_id: Schema.String }))
      .addSuccess(
        Schema.Struct({ items: Schema.Array(KnowledgeBase) }).annotations({ identifier: "AgentKnowledgeBaseList" })
      )
      .annotate(OpenApi.Description, "The knowledge bases an agent searches (its `search_knowledge` tool).")
      .annotateContext(
        operation({
          summary: "List an agent's knowledge bases",
          permission: Policy.anyMember,
          errors: [],
          access: "Only for an agent the caller may use."
        })
      )
  )
  .add(
    HttpApiEndpoint.put("attachKnowledgeBase", "/agents/:agent_id/knowledge-bases/:knowledge_base_id")
      .setPath(AttachmentPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(
        OpenApi.Description,
        "Attach a knowledge base to an agent (spec 2.7; Builder+ who may use the agent): its runs get a " +
          "`search_knowledge` tool. Attaching again changes nothing. Audited."
      )
      .annotateContext(
        operation({
          summary: "Attach a knowledge base to an agent",
          permission: Policy.attachKnowledgeBases,
          errors: [],
          access: "Only to an agent the caller may use."
        })
      )
  )
  .add(
    HttpApiEndpoint.del("detachKnowledgeBase", "/agents/:agent_id/knowledge-bases/:knowledge_base_id")
      .setPath(AttachmentPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Description, "Detach a knowledge base from an agent (Builder+); 404 when it is not attached.")
      .annotateContext(
        operation({
          summary: "Detach a knowledge base from an agent",
          permission: Policy.detachKnowledgeBases,
          errors: [],
          access: "Only from an agent the caller may use."
        })
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Knowledge bases")
  .annotate(
    OpenApi.Description,
    "Documents (text, Markdown, HTML, PDF) indexed for PostgreSQL full-text search, which agents attached to a " +
      "base search as a tool, with cited results in the thread."
  )
{}
