import { type HttpServerRequest, Multipart } from "@effect/platform"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Chunk, Deferred, Effect, Option, Stream } from "effect"
import { BadRequest, PayloadTooLarge } from "../../schema/Errors.js"
import { fileNameProblem, type UploadParams } from "../../schema/Files.js"
import type { AgentId } from "../../schema/Ids.js"
import { invalidField } from "../support/Issues.js"
import { isUuid } from "../support/Uuid.js"
import { type FileInput } from "./Files.js"

/** What an upload request holds: the file's metadata and its content, still unread. */
export interface Upload {
  readonly input: FileInput & { readonly agentId: AgentId | undefined }
  readonly body: Stream.Stream<Uint8Array, BadRequest | PayloadTooLarge>
}

const badMultipart = (message: string) => BadRequest.of(message, undefined, "invalid_multipart")

const endedEarly = () =>
  badMultipart(
    "The request body ended inside the multipart body: close the last part with the boundary and end with " +
      "`--boundary--`."
  )

const noBoundary = "A multipart/form-data Content-Type needs a boundary parameter " +
  "(`multipart/form-data; boundary=…`, 1–70 characters)."

/** What multipasta found wrong (its error is the MultipartError's cause), in words the client can act on. */
const parseProblem = (error: unknown): string => {
  // emitted to a part no one listened to yet, it comes wrapped in Node's ERR_UNHANDLED_ERROR
  const cause = (error as { readonly code?: unknown } | undefined)?.code === "ERR_UNHANDLED_ERROR"
    ? (error as { readonly context?: unknown }).context
    : error
  const tag = (cause as { readonly _tag?: unknown } | undefined)?._tag
  if (tag === "EndNotReached") return endedEarly().message
  if (tag === "InvalidBoundary") return noBoundary
  if (tag === "InvalidDisposition") {
    return "A multipart part has no valid `Content-Disposition: form-data; name=…` header."
  }
  if (tag === "BadHeaders") {
    const reason = (cause as { readonly error?: { readonly reason?: unknown } }).error?.reason
    return reason === "HeaderTooLarge" || reason === "TooManyHeaders"
      ? "A multipart part's headers are too large (at most 16 KiB and 100 headers a part)."
      : "A multipart part has a malformed header."
  }
  return "The multipart body cannot be read as multipart/form-data."
}

const multipartFailure = (e: Multipart.MultipartError): BadRequest | PayloadTooLarge =>
  e.reason === "TooManyParts"
    ? badMultipart(
      "The multipart body has too many parts: send the fields `name` and `agent_id` (optional) and one file."
    )
    : e.reason === "FieldTooLarge"
    ? badMultipart("A multipart field is too long; only the file part may be large (give it a filename).")
    : e.reason === "FileTooLarge" || e.reason === "BodyTooLarge"
    ? PayloadTooLarge.of("The multipart body is larger than this server accepts.", "file_too_large")
    : badMultipart(parseProblem(e.cause))

/** RFC 2046: 1–70 characters. multipasta throws on a missing boundary rather than failing the stream. */
const hasBoundary = (type: string) => {
  const match = /;\s*boundary\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(type)
  const boundary = match?.[1] ?? match?.[2] ?? ""
  return boundary.length >= 1 && boundary.length <= 70
}

/** Succeeds once the client's body has ended (or its connection has closed). */
const requestEnded = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.async<void>((resume) => {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    if (incoming.readableEnded || incoming.destroyed) return resume(Effect.void)
    const done = () => resume(Effect.void)
    incoming.once("end", done)
    incoming.once("close", done)
    return Effect.sync(() => {
      incoming.off("end", done)
      incoming.off("close", done)
    })
  })

/**
 * multipasta neither ends nor fails a body cut off between parts (in a part's headers): once the request has
 * ended the parser has every byte and parses them at once (only unread file content holds it back), so a
 * multipart body still unfinished this long after is one that never will be.
 */
const PARSE_GRACE = "200 millis"

const broken = () => BadRequest.of("The request body broke off before its end.", undefined, "bad_request")

const FIELDS = new Set(["name", "agent_id"])

/**
 * `?name=` as the client sent it: the query's own decoding may tidy a name (a `//` lost, bytes that are not
 * UTF-8 replaced) that the name rule must refuse, so it reads the raw query. Not UTF-8 is a 400 too.
 */
const queryName = (request: HttpServerRequest.HttpServerRequest, params: UploadParams) =>
  Effect.gen(function*() {
    if (params.name === undefined) return
    const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : ""
    for (const pair of query.split("&")) {
      const eq = pair.indexOf("=")
      if ((eq === -1 ? pair : pair.slice(0, eq)) !== "name") continue
      let name: string
      try {
        name = decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, " "))
      } catch {
        return yield* invalidField("name", "must be percent-encoded UTF-8")
      }
      const problem = fileNameProblem(name)
      if (problem !== undefined) return yield* invalidField("name", problem)
    }
  })

/**
 * A raw body: the file itself, its Content-Type kept (application/octet-stream when none), named by
 * `?name=`.
 */
const raw = (request: HttpServerRequest.HttpServerRequest, params: UploadParams): Upload => {
  const length = request.headers["content-length"]
  return {
    input: {
      name: params.name,
      agentId: params.agent_id,
      contentType: request.headers["content-type"]?.trim() || "application/octet-stream",
      overwrite: params.overwrite === "true",
      declaredBytes: length === undefined ? undefined : Number(length)
    },
    // read from the Node request itself, which is left open when reading stops: a refused upload's rest is
    // dropped by the request pipeline (dropRestOfUpload) rather than its connection reset before the answer
    body: NodeStream.fromReadable(() => NodeHttpServerRequest.toIncomingMessage(request), broken, {
      closeOnDone: false
    })
  }
}

/**
 * multipart/form-data: the fields `name` and `agent_id`, then one part with a filename, the file. Query
 * parameters win over fields. The file streams on as the body; what follows it (only the multipart's end
 * may) is read while it streams, and the body ends only with the multipart's end: a body that ends before
 * it fails the upload, which then leaves nothing stored.
 */
const multipart = (request: HttpServerRequest.HttpServerRequest, params: UploadParams) =>
  Effect.gen(function*() {
    if (!hasBoundary(request.headers["content-type"] ?? "")) return yield* badMultipart(noBoundary)
    const ended = requestEnded(request)
    const parts = Multipart.withLimitsStream(request.multipartStream, {
      maxParts: Option.some(8),
      maxFieldSize: 64 * 1024,
      // a part with a filename is the file, whatever its type (a JSON file too)
      fieldMimeTypes: []
    })
    const pull = yield* Stream.toPull(parts)
    let buffered: Array<Multipart.Part> = []
    const next: Effect.Effect<Multipart.Part | undefined, BadRequest | PayloadTooLarge> = Effect.suspend(() => {
      const part = buffered.shift()
      if (part !== undefined) return Effect.succeed(part)
      return pull.pipe(
        Effect.matchEffect({
          onFailure: Option.match({
            onNone: (): Effect.Effect<undefined, BadRequest | PayloadTooLarge> => Effect.succeed(undefined),
            onSome: (e) => Effect.fail(multipartFailure(e))
          }),
          onSuccess: (chunk) => {
            buffered = Chunk.toArray(chunk)
            return next
          }
        })
      )
    })
    const fields = new Map<string, string>()
    let file: Multipart.File | undefined
    // no unread file holds the parser back here: a body that has ended is parsed within the grace
    const stuck = Effect.zipRight(ended, Effect.zipRight(Effect.sleep(PARSE_GRACE), endedEarly()))
    while (file === undefined) {
      const part = yield* Effect.raceFirst(next, stuck)
      if (part === undefined) {
        return yield* badMultipart("The multipart body has no file part: send the file as a part with a filename.")
      }
      if (part._tag === "File") file = part
      else if (!FIELDS.has(part.key)) {
        return yield* badMultipart(`Unknown multipart field \`${part.key}\`: the fields are \`name\` and \`agent_id\`.`)
      } else if (fields.has(part.key)) {
        return yield* badMultipart(`The multipart field \`${part.key}\` is sent twice: send it once.`)
      } else fields.set(part.key, part.value)
    }
    const agentField = fields.get("agent_id")
    if (params.agent_id === undefined && agentField !== undefined && !isUuid(agentField)) {
      return yield* invalidField("agent_id", "must be a UUID")
    }
    const fileDone = yield* Deferred.make<void>()
    // watched while the file streams: a body ending inside the file part fails the parts stream (multipasta's
    // EndNotReached), not always the file's own stream, which would then wait for ever
    const rest = Effect.gen(function*() {
      const part = yield* Effect.raceFirst(
        next,
        Effect.zipRight(Deferred.await(fileDone), stuck)
      )
      if (part === undefined) return
      return yield* badMultipart(
        part._tag === "File"
          ? "The multipart body holds two files; upload one per request."
          : `The field \`${part.key}\` comes after the file part; send fields before the file.`
      )
    })
    const content = Stream.mapError(file.content, multipartFailure).pipe(
      Stream.ensuring(Deferred.succeed(fileDone, undefined))
    )
    return {
      input: {
        name: params.name ?? fields.get("name") ?? file.name,
        agentId: params.agent_id ?? (agentField as AgentId | undefined),
        contentType: file.contentType || "application/octet-stream",
        overwrite: params.overwrite === "true",
        declaredBytes: undefined
      },
      body: Stream.merge(content, Stream.drain(Stream.fromEffect(rest)))
    } satisfies Upload
  })

const isMultipart = (type: string | undefined) => type !== undefined && /^\s*multipart\/form-data\b/i.test(type)

/** The upload a request carries; scoped: a multipart body is parsed while the scope is open. */
export const uploadOf = (request: HttpServerRequest.HttpServerRequest, params: UploadParams) =>
  Effect.zipRight(
    queryName(request, params),
    isMultipart(request.headers["content-type"]) ? multipart(request, params) : Effect.succeed(raw(request, params))
  )
