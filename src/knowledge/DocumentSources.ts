import { Effect } from "effect"
import { BadRequest, PayloadTooLarge, UnsupportedMediaType } from "../../schema/Errors.js"
import type { AddDocument, DocumentFormat } from "../../schema/KnowledgeBases.js"
import type { Principal } from "../../schema/Security.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { Files } from "../files/Files.js"
import { invalidField } from "../support/Issues.js"
import { asUtf8, formatOf } from "./TextExtraction.js"
import { UrlSource } from "./UrlSource.js"

/**
 * Where a new document comes from, checked before it is queued: exactly one of inline text, a workspace file
 * the caller may read (400 `unknown_file`), or a URL fetched now through the egress guard (UrlSource); at most
 * SWITCHYARD_MAX_DOCUMENT_BYTES (default 25 MiB; 413 `document_too_large`), of a format it can read (415
 * `unsupported_document_type`).
 */
export class DocumentSources extends Effect.Service<DocumentSources>()("knowledge/DocumentSources", {
  effect: Effect.gen(function*() {
    const files = yield* Files
    const urls = yield* UrlSource
    const maxBytes = (yield* SwitchyardConfig).knowledge.maxDocumentBytes

    const tooLarge = PayloadTooLarge.of(
      `The document is larger than this server accepts: at most ${maxBytes} bytes (SWITCHYARD_MAX_DOCUMENT_BYTES).`,
      "document_too_large"
    )

    const unsupported = (what: string) =>
      UnsupportedMediaType.of(
        `${what} is not a supported document type: add text (txt), Markdown (md), HTML (html) or PDF (pdf), or ` +
          "name the format with `format`.",
        "unsupported_document_type"
      )

    /** The document's bytes, format and size, from whichever source it names (each checked now). */
    const of = (principal: Principal, input: AddDocument) =>
      Effect.gen(function*() {
        const given = (["text", "file_id", "url"] as const).filter((k) => input[k] !== undefined)
        if (given.length !== 1) {
          return yield* given.length === 0
            ? invalidField("", "The request has no source: give one of `text`, `file_id` or `url`.")
            : invalidField(given[1]!, "is a second source: give exactly one of `text`, `file_id` or `url`.")
        }
        if (input.text !== undefined) {
          const bytes = Buffer.from(input.text, "utf8")
          if (bytes.length > maxBytes) return yield* tooLarge
          const format = input.format ?? formatOf(undefined, input.name) ?? "txt"
          if (format === "pdf") {
            return yield* UnsupportedMediaType.of(
              "Inline `text` cannot be PDF: upload the PDF as a workspace file (`file_id`) or give its `url`; inline " +
                "text is txt, md or html.",
              "unsupported_document_type"
            )
          }
          return { type: "text" as const, bytes, format, size: bytes.length, fileId: null, url: null }
        }
        if (input.file_id !== undefined) {
          const row = yield* files.find(principal, input.file_id).pipe(
            Effect.catchTag("NotFound", () =>
              BadRequest.of(
                `There is no workspace file ${input.file_id} that you can read.`,
                undefined,
                "unknown_file"
              ))
          )
          if (Number(row.size) > maxBytes) return yield* tooLarge
          const format = input.format ?? formatOf(row.content_type, row.name)
          if (format === undefined) return yield* unsupported(`A file of type ${row.content_type} (${row.name})`)
          return { type: "file" as const, bytes: undefined, format, size: Number(row.size), fileId: row.id, url: null }
        }
        const url = input.url!
        if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) {
          return yield* invalidField("url", "must be an http(s) URL")
        }
        const fetched = yield* urls.fetch(url, maxBytes)
        const format: DocumentFormat | undefined = input.format ??
          formatOf(fetched.contentType, new URL(fetched.url).pathname)
        if (format === undefined) return yield* unsupported(`An answer of type ${fetched.contentType ?? "(none)"}`)
        const bytes = format === "pdf" ? fetched.bytes : asUtf8(fetched.bytes, fetched.contentType)
        return { type: "url" as const, bytes, format, size: fetched.bytes.length, fileId: null, url }
      })

    return { of } as const
  }),
  dependencies: [Files.Default, UrlSource.Default]
}) {}
