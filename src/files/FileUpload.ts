import { type HttpServerRequest, Multipart } from "@effect/platform"
import { NodeHttpServerRequest, NodeStream } from "@effect/platform-node"
import { Chunk, Effect, Option, Stream } from "effect"
import { BadRequest } from "../../schema/Errors.js"
import type { UploadParams } from "../../schema/Files.js"
import type { AgentId } from "../../schema/Ids.js"
import { type FileInput, validation } from "./Files.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** What an upload request holds: the file's metadata and its content, still unread. */
export interface Upload {
  readonly input: FileInput & { readonly agentId: AgentId | undefined }
  readonly body: Stream.Stream<Uint8Array, BadRequest>
}

const badMultipart = (message: string) => BadRequest.of(message, undefined, "invalid_multipart")

const multipartFailure = (e: Multipart.MultipartError) =>
  badMultipart(
    e.reason === "TooManyParts"
      ? "The multipart body has too many parts: send the fields `name` and `agent_id` (optional) and one file."
      : e.reason === "FieldTooLarge"
      ? "A multipart field is too long; only the file part may be large (give it a filename)."
      : "The multipart body cannot be read as multipart/form-data."
  )

const broken = () => BadRequest.of("The request body broke off before its end.", undefined, "bad_request")

const FIELDS = new Set(["name", "agent_id"])

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
 * parameters win over fields. The file streams on as the body; what follows it is read after it (only the
 * multipart's end may), before the upload is made visible.
 */
const multipart = (request: HttpServerRequest.HttpServerRequest, params: UploadParams) =>
  Effect.gen(function*() {
    const parts = Multipart.withLimitsStream(request.multipartStream, {
      maxParts: Option.some(8),
      maxFieldSize: 64 * 1024,
      // a part with a filename is the file, whatever its type (a JSON file too)
      fieldMimeTypes: []
    })
    const pull = yield* Stream.toPull(parts)
    let buffered: Array<Multipart.Part> = []
    const next: Effect.Effect<Multipart.Part | undefined, BadRequest> = Effect.suspend(() => {
      const part = buffered.shift()
      if (part !== undefined) return Effect.succeed(part)
      return pull.pipe(
        Effect.matchEffect({
          onFailure: Option.match({ onNone: () => Effect.succeed(undefined), onSome: (e) => multipartFailure(e) }),
          onSuccess: (chunk) => {
            buffered = Chunk.toArray(chunk)
            return next
          }
        })
      )
    })
    const fields = new Map<string, string>()
    let file: Multipart.File | undefined
    while (file === undefined) {
      const part = yield* next
      if (part === undefined) {
        return yield* badMultipart("The multipart body has no file part: send the file as a part with a filename.")
      }
      if (part._tag === "File") file = part
      else if (!FIELDS.has(part.key)) {
        return yield* badMultipart(`Unknown multipart field \`${part.key}\`: the fields are \`name\` and \`agent_id\`.`)
      } else fields.set(part.key, part.value)
    }
    const agentField = fields.get("agent_id")
    if (params.agent_id === undefined && agentField !== undefined && !UUID.test(agentField)) {
      return yield* validation("agent_id", "must be a UUID")
    }
    const rest = Effect.gen(function*() {
      const part = yield* next
      if (part === undefined) return
      return yield* badMultipart(
        part._tag === "File"
          ? "The multipart body holds two files; upload one per request."
          : `The field \`${part.key}\` comes after the file part; send fields before the file.`
      )
    })
    return {
      input: {
        name: params.name ?? fields.get("name") ?? file.name,
        agentId: params.agent_id ?? (agentField as AgentId | undefined),
        contentType: file.contentType || "application/octet-stream",
        overwrite: params.overwrite === "true",
        declaredBytes: undefined
      },
      body: Stream.concat(Stream.mapError(file.content, multipartFailure), Stream.drain(Stream.fromEffect(rest)))
    } satisfies Upload
  })

const isMultipart = (type: string | undefined) => type !== undefined && /^\s*multipart\/form-data\b/i.test(type)

/** The upload a request carries; scoped: a multipart body is parsed while the scope is open. */
export const uploadOf = (request: HttpServerRequest.HttpServerRequest, params: UploadParams) =>
  isMultipart(request.headers["content-type"]) ? multipart(request, params) : Effect.succeed(raw(request, params))
