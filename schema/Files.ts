import { Schema } from "effect"
import { AgentId, uuidId } from "./Ids.js"
import { IntegerParam, StrictFlagParam } from "./QueryParams.js"
import { Timestamp } from "./Timestamp.js"

export const FileId = uuidId(
  "FileId",
  "a workspace file",
  "Identifier of a workspace file (UUID). A file's bytes never change under it."
)
export type FileId = typeof FileId.Type

/** Longest file name (path) accepted, in characters. */
export const MAX_FILE_NAME = 1024

// control characters (C0, DEL) have no place in a name a person reads or a shell quotes

const CONTROL = /[\u0000-\u001f\u007f]/

// bidirectional embeddings, overrides and isolates make a name display as another (`txt.exe` as `exe.txt`)
const BIDI_CONTROL = /[\u202a-\u202e\u2066-\u2069]/

/**
 * What is wrong with a file name, or `undefined`. A name is a relative path: segments separated by `/`,
 * none empty, `.` or `..`; no backslash, no control or bidirectional control character; 1–1024 characters.
 * One rule, for the contract's schemas and for names that come from a multipart part or a tool call.
 */
export const fileNameProblem = (name: string): string | undefined => {
  if (name.length === 0) return "must not be empty"
  if (name.length > MAX_FILE_NAME) return `must be at most ${MAX_FILE_NAME} characters`
  if (CONTROL.test(name)) return "must not contain control characters"
  if (BIDI_CONTROL.test(name)) return "must not contain bidirectional control characters (U+202A–U+202E, U+2066–U+2069)"
  if (name.includes("\\")) return "must not contain a backslash; separate folders with /"
  if (name.startsWith("/") || name.endsWith("/")) return "must not start or end with /"
  for (const segment of name.split("/")) {
    if (segment === "") return "must not contain an empty path segment (//)"
    if (segment === "." || segment === "..") return "must not contain a . or .. path segment"
  }
  return undefined
}

export const FileName = Schema.String.pipe(
  Schema.filter((name) => fileNameProblem(name) ?? true)
).annotations({
  identifier: "FileName",
  description: "The file's name: a relative path such as `reports/2026/q1.csv` (segments separated by `/`, none " +
    "empty, `.` or `..`; no backslash, control or bidirectional control character; at most 1024 characters). " +
    "Unique in its scope."
})

export const FileScope = Schema.Literal("organization", "agent").annotations({
  description: "`organization`: a file of the organization's workspace. `agent`: a file of one agent's workspace " +
    "(`agent_id`)."
})
export type FileScope = typeof FileScope.Type

export const FileOwner = Schema.Struct({
  type: Schema.Literal("user", "api_key", "agent").annotations({
    description: "Who wrote the file: a person (personal key), an organization key, or an agent's run."
  }),
  id: Schema.String.annotations({ description: "The user id, API key id or agent id." })
}).annotations({ identifier: "FileOwner" })
export type FileOwner = typeof FileOwner.Type

export class WorkspaceFile extends Schema.Class<WorkspaceFile>("WorkspaceFile")({
  id: FileId,
  name: Schema.String.annotations({ description: "Its name (a relative path), unique in its scope." }),
  size: Schema.NonNegativeInt.annotations({ description: "Size in bytes." }),
  sha256: Schema.String.annotations({ description: "SHA-256 of the content, hex; also its `ETag`." }),
  content_type: Schema.String.annotations({ description: "Media type, as uploaded." }),
  scope: FileScope,
  agent_id: Schema.NullOr(AgentId).annotations({
    description: "The agent whose workspace holds it; null: the organization's."
  }),
  owner: FileOwner,
  created_at: Timestamp
}) {}

export const FilePage = Schema.Struct({
  items: Schema.Array(WorkspaceFile),
  next_cursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "FilePage" })
export type FilePage = typeof FilePage.Type

const prefix = Schema.String.pipe(Schema.maxLength(MAX_FILE_NAME)).annotations({
  description: "Only names starting with this text (byte-wise), e.g. `reports/`."
})

/** `GET /v1/files` query: name order (byte-wise), then id. */
export const FileListParams = Schema.Struct({
  prefix: Schema.optional(prefix),
  agent_id: Schema.optional(AgentId).annotations({ description: "Only this agent's workspace." }),
  limit: Schema.optional(IntegerParam(1, 200)).annotations({
    description: "Page size, 1–200 (default 50)."
  }),
  cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })
})

/** `POST /v1/files` query. */
export const UploadParams = Schema.Struct({
  name: Schema.optional(FileName).annotations({
    description: "The file's name. Required for a raw body; a multipart upload may give it as the `name` field or " +
      "the file part's filename instead."
  }),
  agent_id: Schema.optional(AgentId).annotations({
    description: "Store it in this agent's workspace; without it, in the organization's."
  }),
  overwrite: Schema.optional(StrictFlagParam).annotations({
    description: "`true`: a file of that name in the scope is replaced (the new one gets a new id). Otherwise " +
      "such a name is a 409 `file_exists`."
  })
})
export type UploadParams = typeof UploadParams.Type

/** MCP `read_file` and the agents' tool: a window of a file as text. */
export const FileText = Schema.Struct({
  file: WorkspaceFile,
  text: Schema.String.annotations({ description: "The bytes read, as UTF-8." }),
  offset: Schema.NonNegativeInt.annotations({ description: "Where the text starts, in bytes." }),
  bytes_read: Schema.NonNegativeInt.annotations({
    description: "Bytes the text holds; `offset + bytes_read` reads on."
  }),
  truncated: Schema.Boolean.annotations({ description: "Whether the file goes on past this text." })
}).annotations({ identifier: "FileText" })
export type FileText = typeof FileText.Type
