import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  BadRequestWire,
  ConflictWire,
  ForbiddenWire,
  NotFoundWire,
  PayloadTooLargeWire,
  RangeNotSatisfiableWire
} from "./Errors.js"
import { FileId, FileListParams, FilePage, UploadParams, WorkspaceFile } from "./Files.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { Authentication } from "./Security.js"

const FilePath = Schema.Struct({ file_id: FileId })

// the upload's body is read by its handler as a stream (never decoded whole), so it is described here
const uploadBody = {
  requestBody: {
    required: true,
    description: "The file itself as the raw body, any Content-Type (stored as the file's type; `?name=` names " +
      "it), or multipart/form-data with one file part.",
    content: {
      "application/octet-stream": {
        schema: { type: "string", format: "binary" }
      },
      "multipart/form-data": {
        schema: {
          type: "object",
          required: ["file"],
          properties: {
            name: { type: "string", description: "The file's name, when `?name=` does not give it." },
            agent_id: { type: "string", format: "uuid", description: "Store it in this agent's workspace." },
            file: { type: "string", format: "binary", description: "The file: one part with a filename, last." }
          }
        }
      }
    }
  }
}

export class FilesApi extends HttpApiGroup.make("files")
  .add(
    HttpApiEndpoint.post("uploadFile", "/files")
      .annotateContext(
        operation({
          summary: "Upload a workspace file",
          permission: Policy.uploadFiles,
          errors: [
            "bad_request",
            "invalid_multipart",
            "file_exists",
            "file_too_large",
            "storage_quota_exceeded",
            "unknown_agent",
            "forbidden"
          ],
          access: "A key limited to agents writes only in those agents' workspaces (give `agent_id`)."
        })
      )
      .setUrlParams(UploadParams)
      // what the Effect client sends (bytes as application/octet-stream, a string as text/plain); the server
      // reads the body as a stream itself (`handleRaw`), whatever its Content-Type
      .setPayload(Schema.Union(HttpApiSchema.Uint8Array(), HttpApiSchema.Text()))
      .addSuccess(WorkspaceFile, { status: 201 })
      .addError(PayloadTooLargeWire)
      .annotate(
        OpenApi.Description,
        "Upload a workspace file: the raw body with `?name=` (its Content-Type is kept), or " +
          "multipart/form-data with one file part. Streamed to storage, up to SWITCHYARD_MAX_FILE_BYTES " +
          "(413 `file_too_large`), within the organization's storage quota, SWITCHYARD_ORG_FILE_QUOTA_BYTES " +
          "(413 `storage_quota_exceeded`). A name taken in the scope is a 409 `file_exists` unless `overwrite=true`."
      )
      .annotate(OpenApi.Override, uploadBody)
  )
  .add(
    HttpApiEndpoint.get("listFiles", "/files")
      .annotateContext(
        operation({
          summary: "List workspace files",
          permission: Policy.anyMember,
          errors: ["not_found", "invalid_cursor"]
        })
      )
      .setUrlParams(FileListParams)
      .addSuccess(FilePage)
      .annotate(
        OpenApi.Description,
        "Workspace files the caller may see, in name order (byte-wise). An `agent_id` the caller may not " +
          "see is a 404."
      )
  )
  .add(
    HttpApiEndpoint.get("getFile", "/files/:file_id")
      .annotateContext(operation({ summary: "Get a workspace file", permission: Policy.anyMember, errors: [] }))
      .setPath(FilePath)
      .addSuccess(WorkspaceFile)
  )
  .add(
    HttpApiEndpoint.del("deleteFile", "/files/:file_id")
      .annotateContext(
        operation({
          summary: "Delete a workspace file",
          permission: Policy.deleteFiles,
          errors: ["forbidden"],
          access: "A key limited to agents deletes only in those agents' workspaces."
        })
      )
      .setPath(FilePath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Description, "Delete a workspace file and its content. Audited.")
  )
  .add(
    HttpApiEndpoint.get("getFileContent", "/files/:file_id/content")
      .annotateContext(
        operation({
          summary: "Download a workspace file",
          permission: Policy.anyMember,
          errors: ["invalid_range", "range_not_satisfiable"]
        })
      )
      .setPath(FilePath)
      .addSuccess(HttpApiSchema.Uint8Array())
      .addError(RangeNotSatisfiableWire)
      .annotate(
        OpenApi.Description,
        "The file's bytes, streamed, with its Content-Type. `ETag` is its SHA-256 (`If-None-Match` gives 304); " +
          "one `Range: bytes=…` gives 206 with `Content-Range` (416 past the end, 400 `invalid_range` when " +
          "malformed or several); `If-Range` is honoured."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Workspace files")
  .annotate(
    OpenApi.Description,
    "Files of the organization's and each agent's workspace, which runs read and write (docs/guides/files.md)."
  )
{}
