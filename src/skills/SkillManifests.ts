import { Effect, Either, ParseResult, Schema } from "effect"
import * as Yaml from "yaml"
import { BadRequest } from "../../schema/Errors.js"
import type { AgentId, ConnectionId, ConnectorId } from "../../schema/Ids.js"
import { holds, Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import {
  ApprovalCondition,
  type ManifestUpload,
  type Skill,
  type SkillAction,
  type SkillId,
  SkillVisibility
} from "../../schema/Skills.js"
import { ConnectorCatalog } from "../connectors/ConnectorCatalog.js"
import { ConnectorRepo } from "../connectors/ConnectorRepo.js"
import { FunctionRepo } from "../functions/FunctionRepo.js"
import { requireOrganizationKey } from "../identity/IdentityPolicy.js"
import { isUuid } from "../support/Uuid.js"
import { Skills } from "./Skills.js"

/** `switchyard.yaml`, at a repository's root: the skills it publishes and the OpenAPI documents they use. */
const ManifestAction = Schema.Struct({
  operation: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  connection: Schema.optional(Schema.String.pipe(Schema.minLength(1))).annotations({
    description: "A connection id, or the name of a connection of `connector`."
  }),
  connector: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  function: Schema.optional(Schema.String.pipe(Schema.minLength(1))).annotations({
    description: "A custom function's id or name, instead of `operation` and `connection`."
  }),
  requires_approval: Schema.optional(Schema.Boolean),
  approval_condition: Schema.optional(ApprovalCondition)
})

const Manifest = Schema.Struct({
  version: Schema.optional(Schema.Literal(1)),
  connectors: Schema.optionalWith(
    Schema.Array(Schema.Struct({
      name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
      openapi: Schema.String.pipe(Schema.minLength(1)),
      server_url: Schema.optional(Schema.String)
    })),
    { default: () => [] }
  ),
  skills: Schema.Array(Schema.Struct({
    name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
    description: Schema.optional(Schema.String.pipe(Schema.maxLength(10_000))),
    visibility: Schema.optional(SkillVisibility),
    allowlist: Schema.optional(Schema.Array(Schema.String)),
    actions: Schema.Array(ManifestAction).pipe(Schema.minItems(1))
  })).pipe(Schema.minItems(1))
})
type Manifest = typeof Manifest.Type

interface Problem {
  readonly field: string
  readonly line: number | null
  readonly message: string
}

const fieldName = (path: ReadonlyArray<PropertyKey>) =>
  path.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`),
    ""
  )

/** Line (1-based) of the node at `path`, or of its nearest parent that exists. */
const lineOf = (doc: Yaml.Document, counter: Yaml.LineCounter, path: ReadonlyArray<PropertyKey>): number | null => {
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n) as Array<unknown>, true) as Yaml.Node | undefined
    if (node?.range !== undefined && node.range !== null) return counter.linePos(node.range[0]).line
  }
  return null
}

const invalid = (problems: ReadonlyArray<Problem>) =>
  BadRequest.of(
    `switchyard.yaml is not valid: ${
      problems.slice(0, 5).map((p) =>
        `${p.field || "(root)"}${p.line === null ? "" : ` (line ${p.line})`}: ${p.message}`
      )
        .join("; ")
    }`,
    { problems },
    "invalid_manifest"
  )

/** Parses and checks the manifest; every problem names its field and line. */
export const parseManifest = (text: string) => {
  const counter = new Yaml.LineCounter()
  const doc = Yaml.parseDocument(text, { lineCounter: counter })
  if (doc.errors.length > 0) {
    return Either.left(doc.errors.map((e): Problem => ({
      field: "",
      line: e.linePos?.[0]?.line ?? null,
      message: e.message.split("\n")[0]!
    })))
  }
  // an alias whose anchor is missing, or an alias bomb, throws only when the document is resolved
  let value: unknown
  try {
    value = doc.toJS()
  } catch (e) {
    return Either.left([{ field: "", line: null, message: e instanceof Error ? e.message : String(e) }])
  }
  const decoded = Schema.decodeUnknownEither(Manifest, { errors: "all", onExcessProperty: "error" })(value)
  if (Either.isRight(decoded)) return Either.right({ manifest: decoded.right, doc, counter })
  return Either.left(
    ParseResult.ArrayFormatter.formatErrorSync(decoded.left).map((issue): Problem => ({
      field: fieldName(issue.path),
      line: lineOf(doc, counter, issue.path),
      message: issue.message
    }))
  )
}

/**
 * `POST /v1/skills/publish`: a repository's manifest. Everything is checked (syntax, fields, that every
 * connection and operation exists, that the caller may change each skill) before anything changes; then
 * connectors it declares are added or replaced and its skills created or given a new version, each change
 * through the same service (and audit record) as the REST endpoints. An Admin's upload publishes the
 * skills; a Builder's creates drafts for an Admin to publish, and cannot change published skills.
 */
export class SkillManifests extends Effect.Service<SkillManifests>()("skills/SkillManifests", {
  effect: Effect.gen(function*() {
    const connectors = yield* ConnectorRepo
    const skills = yield* Skills
    const catalog = yield* ConnectorCatalog
    const functions = yield* FunctionRepo

    const connectorByName = (principal: Principal, name: string) =>
      connectors.findConnectorIdByName(principal.organizationId, name)

    /** A custom function of the organization, by id or by name. */
    const connectionByName = (principal: Principal, connectorId: ConnectorId, name: string) =>
      connectors.findConnectionIdByName(principal.organizationId, connectorId, name, principal.userId)

    const publish = Effect.fn("SkillManifests.publish")(
      function*(principal: Principal, upload: typeof ManifestUpload.Type) {
        yield* requireOrganizationKey(principal, Policy.publishManifests)
        const parsed = parseManifest(upload.manifest)
        if (Either.isLeft(parsed)) return yield* invalid(parsed.left)
        const { counter, doc, manifest } = parsed.right
        const at = (path: ReadonlyArray<PropertyKey>, message: string): Problem => ({
          field: fieldName(path),
          line: lineOf(doc, counter, path),
          message
        })
        const problems: Array<Problem> = []
        const admin = holds(principal.role, Policy.manageEverySkill)
        // the organization's functions, read once for every action that names one (by id or by name)
        const functionsOfOrg = yield* Effect.cached(functions.list(principal.organizationId))
        const functionByRef = (ref: string) =>
          Effect.map(functionsOfOrg, (rows) => (rows.find((f) => f.id === ref) ?? rows.find((f) => f.name === ref))?.id)

        // documents the manifest refers to must have been uploaded with it
        for (const [i, c] of manifest.connectors.entries()) {
          if (upload.files[c.openapi] === undefined && upload.files[c.openapi.replace(/^\.\//, "")] === undefined) {
            problems.push(
              at(["connectors", i, "openapi"], `the file '${c.openapi}' was not uploaded with the manifest`)
            )
          }
        }
        const declared = new Set(manifest.connectors.map((c) => c.name.toLowerCase()))
        const existing = new Map<string, Skill>()
        for (const [i, s] of manifest.skills.entries()) {
          const current = yield* skills.findByName(principal, s.name)
          if (current !== undefined) {
            existing.set(s.name.toLowerCase(), current)
            if (!admin && (current.owner_id !== principal.userId || current.status === "published")) {
              problems.push(at(
                ["skills", i, "name"],
                current.status === "published"
                  ? `'${s.name}' is published: only an Admin may change it`
                  : `'${s.name}' belongs to someone else: only its owner or an Admin may change it`
              ))
            }
          }
          if (s.visibility !== "restricted" && (s.allowlist?.length ?? 0) > 0) {
            problems.push(at(["skills", i, "allowlist"], "applies to `restricted` skills only"))
          }
          for (const [j, agentId] of (s.allowlist ?? []).entries()) {
            if (!isUuid(agentId)) problems.push(at(["skills", i, "allowlist", j], `'${agentId}' is not an agent id`))
          }
          for (const [j, a] of s.actions.entries()) {
            if (a.function !== undefined) {
              if (a.operation !== undefined || a.connection !== undefined || a.connector !== undefined) {
                problems.push(
                  at(["skills", i, "actions", j], "give either `function`, or `operation` with `connection`, not both")
                )
              } else if ((yield* functionByRef(a.function)) === undefined) {
                problems.push(
                  at(["skills", i, "actions", j, "function"], `there is no function '${a.function}'`)
                )
              }
              continue
            }
            if (a.operation === undefined || a.connection === undefined) {
              problems.push(
                at(
                  ["skills", i, "actions", j],
                  "give `operation` and `connection` (a connector's operation), or `function` (a custom function)"
                )
              )
            } else if (a.connector === undefined && !isUuid(a.connection)) {
              problems.push(
                at(
                  ["skills", i, "actions", j, "connection"],
                  "give a connection id, or `connector` with the connection's name"
                )
              )
            } else if (
              a.connector !== undefined && !declared.has(a.connector.toLowerCase()) &&
              (yield* connectorByName(principal, a.connector)) === undefined
            ) {
              problems.push(
                at(["skills", i, "actions", j, "connector"], `there is no connector named '${a.connector}'`)
              )
            }
          }
        }
        if (problems.length > 0) return yield* invalid(problems)

        // connectors first: the skills' actions may refer to them
        const connectorReport: Array<{ name: string; id: string; outcome: "created" | "updated" }> = []
        for (const [i, c] of manifest.connectors.entries()) {
          const spec = upload.files[c.openapi] ?? upload.files[c.openapi.replace(/^\.\//, "")]!
          const input = { spec, name: c.name, ...(c.server_url === undefined ? {} : { server_url: c.server_url }) }
          const id = yield* connectorByName(principal, c.name)
          const done =
            yield* (id === undefined ? catalog.create(principal, input) : catalog.replace(principal, id, input)).pipe(
              Effect.mapError((e) =>
                e._tag === "BadRequest" ? invalid([at(["connectors", i, "openapi"], e.message)]) : e
              )
            )
          connectorReport.push({ name: c.name, id: done.id, outcome: id === undefined ? "created" : "updated" })
        }

        // resolve each action to a connection; every failure is reported at once
        const resolved: Array<Array<SkillAction>> = []
        for (const [i, s] of manifest.skills.entries()) {
          const actions: Array<SkillAction> = []
          for (const [j, a] of s.actions.entries()) {
            const approval = {
              requires_approval: a.requires_approval ?? false,
              ...(a.approval_condition === undefined ? {} : { approval_condition: a.approval_condition })
            }
            if (a.function !== undefined) {
              actions.push({ function_id: (yield* functionByRef(a.function))!, ...approval })
              continue
            }
            const connection = a.connection!
            let connectionId: ConnectionId | undefined = isUuid(connection) && a.connector === undefined
              ? connection as ConnectionId
              : undefined
            if (a.connector !== undefined) {
              const connectorId = yield* connectorByName(principal, a.connector)
              connectionId = connectorId === undefined
                ? undefined
                : isUuid(connection)
                ? connection as ConnectionId
                : yield* connectionByName(principal, connectorId, connection)
              if (connectionId === undefined) {
                problems.push(
                  at(
                    ["skills", i, "actions", j, "connection"],
                    `connector '${a.connector}' has no connection '${a.connection}' you may use`
                  )
                )
                continue
              }
            }
            actions.push({ connection_id: connectionId!, operation_id: a.operation!, ...approval })
          }
          resolved.push(actions)
        }
        if (problems.length > 0) return yield* invalid(problems)

        const report: Array<
          {
            name: string
            id: SkillId
            outcome: "created" | "updated" | "unchanged"
            status: Skill["status"]
            version: number
          }
        > = []
        for (const [i, s] of manifest.skills.entries()) {
          const mapped = <E extends { readonly _tag: string; readonly message: string }>(e: E) =>
            e._tag === "BadRequest" ? invalid([at(["skills", i], e.message)]) : e
          const current = existing.get(s.name.toLowerCase())
          let skill: Skill
          let outcome: "created" | "updated" | "unchanged"
          if (current === undefined) {
            skill = yield* skills.create(principal, {
              name: s.name,
              description: s.description ?? "",
              actions: resolved[i]!,
              visibility: s.visibility ?? "private",
              allowlist: (s.allowlist ?? []) as ReadonlyArray<AgentId>
            }).pipe(Effect.mapError(mapped))
            outcome = "created"
          } else {
            const same = current.description === (s.description ?? current.description) &&
              JSON.stringify(current.actions) === JSON.stringify(resolved[i])
            skill = same ? current : yield* skills.update(principal, current.id, {
              ...(s.description === undefined ? {} : { description: s.description }),
              actions: resolved[i]!
            }).pipe(Effect.mapError(mapped))
            outcome = same ? "unchanged" : "updated"
            if (
              s.visibility !== undefined &&
              (s.visibility !== current.visibility ||
                JSON.stringify(s.allowlist ?? []) !== JSON.stringify(current.allowlist))
            ) {
              skill = yield* skills.setAccess(principal, current.id, {
                visibility: s.visibility,
                allowlist: (s.allowlist ?? []) as ReadonlyArray<AgentId>
              })
                .pipe(Effect.mapError(mapped))
              if (outcome === "unchanged") outcome = "updated"
            }
          }
          if (holds(principal.role, Policy.publishSkills) && skill.status === "draft") {
            skill = yield* skills.setStatus(principal, skill.id, "published")
          }
          report.push({ name: skill.name, id: skill.id, outcome, status: skill.status, version: skill.version })
        }
        return { skills: report, connectors: connectorReport }
      }
    )

    return { publish } as const
  }),
  dependencies: [FunctionRepo.Default]
}) {}
