import { HttpApiBuilder, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Effect, Layer, Stream } from "effect"
import { Api } from "../../schema/Api.js"
import { BadRequest } from "../../schema/Errors.js"
import { Principal } from "../../schema/Security.js"
import { noneMatch, parseRange, rangeStillValid } from "./ByteRange.js"
import type { FileRow } from "./FileRepo.js"
import { Files } from "./Files.js"
import { uploadOf } from "./FileUpload.js"

const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Principal, f)

/** `attachment`, with the last path segment as the filename (an ASCII fallback and the UTF-8 original). */
const disposition = (name: string) => {
  const base = name.slice(name.lastIndexOf("/") + 1)
  const ascii = base.replace(/[^\x20-\x7e]|["\\]/g, "_")
  const encoded = encodeURIComponent(base).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`
}

/**
 * A file's bytes as the answer to `GET …/content`: conditional on `If-None-Match`, one `Range` (`If-Range`
 * honoured), streamed from storage. Served as an attachment that browsers neither sniff nor run: a file
 * uploaded as HTML is not a page of this origin.
 */
const contentResponse = (files: Files, row: FileRow, request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const headers = request.headers
    const size = Number(row.size)
    const etag = `"${row.sha256}"`
    const validators = {
      etag,
      "last-modified": row.created_at.toUTCString(),
      "cache-control": "private, no-cache",
      "accept-ranges": "bytes"
    }
    if (noneMatch(headers["if-none-match"], etag)) return HttpServerResponse.empty({ status: 304, headers: validators })
    const range = rangeStillValid(headers["if-range"], etag) ? parseRange(headers["range"], size) : undefined
    if (range?._tag === "Invalid") return yield* BadRequest.of(range.message, undefined, "invalid_range")
    if (range?._tag === "Unsatisfiable") {
      // our error body; the request pipeline adds the request id, as to every error
      return HttpServerResponse.unsafeJson({
        error: {
          code: "range_not_satisfiable",
          message: size === 0
            ? "The file is empty (0 bytes): no range of it can be sent; download it without a Range header."
            : `The range is outside the file, which has ${size} bytes: ask for bytes 0 to ${size - 1}.`
        }
      }, { status: 416, headers: { ...validators, "content-range": `bytes */${size}` } })
    }
    const part = range?._tag === "Part" ? range : undefined
    const start = part?.start ?? 0
    const end = part?.end ?? size - 1
    // a body that fails after its headers (the file deleted meanwhile) closes the connection: ended short of its
    // Content-Length on a kept-alive connection, it would leave the client waiting for the rest
    const cutOff = (cause: Cause.Cause<unknown>) =>
      Effect.zipRight(
        Effect.sync(() => NodeHttpServerRequest.toServerResponse(request).destroy()),
        Cause.isFailType(cause) || Cause.isInterruptedOnly(cause)
          ? Effect.logInfo(`download of file ${row.id} cut off`, cause)
          : Effect.logError(`download of file ${row.id} cut off`, cause)
      )
    const body = files.content(row, start, end).pipe(Stream.catchAllCause((cause) => Stream.execute(cutOff(cause))))
    return HttpServerResponse.stream(body, {
      status: part === undefined ? 200 : 206,
      contentType: row.content_type,
      contentLength: end - start + 1,
      headers: {
        ...validators,
        ...(part === undefined ? {} : { "content-range": `bytes ${start}-${end}/${size}` }),
        "content-disposition": disposition(row.name),
        "x-content-type-options": "nosniff",
        "content-security-policy": "sandbox"
      }
    })
  })

export const FilesHttpLive = HttpApiBuilder.group(Api, "files", (handlers) =>
  Effect.gen(function*() {
    const files = yield* Files
    return handlers
      .handleRaw("uploadFile", ({ request, urlParams }) =>
        as((p) =>
          Effect.scoped(
            Effect.flatMap(uploadOf(request, urlParams), ({ body, input }) => files.upload(p, input, body))
          )
        ))
      .handle("listFiles", ({ urlParams }) => as((p) => files.list(p, urlParams)))
      .handle("getFile", ({ path }) => as((p) => files.get(p, path.file_id)))
      .handle("deleteFile", ({ path }) => as((p) => files.remove(p, path.file_id)))
      .handle("getFileContent", ({ path, request }) =>
        as((p) =>
          Effect.flatMap(files.open(p, path.file_id), (row) => contentResponse(files, row, request))
        ))
  })).pipe(Layer.provide(Files.Default))
