import { OpenApi } from "@effect/platform"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Api } from "../../schema/Api.js"
import type { ConnectorId } from "../../schema/Ids.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { ConnectorRepo } from "./ConnectorRepo.js"
import { importOpenApi } from "./openapi/OpenApiImport.js"

// fixed ids: the same built-in connector on every node and across releases
const HTTP_JSON_ID = "5e1f0000-0000-4000-8000-000000000001" as ConnectorId
/** The built-in Switchyard connector: its calls always run as the caller (see OwnApi). */
export const SWITCHYARD_CONNECTOR_ID = "5e1f0000-0000-4000-8000-000000000002" as ConnectorId

const withoutSecurity = (paths: Record<string, Record<string, any>>) =>
  Object.fromEntries(
    Object.entries(paths).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item).map(([method, op]) => {
          if (typeof op !== "object" || op === null || !("security" in op)) return [method, op]
          const { security: _, ...rest } = op
          return [method, rest]
        })
      )
    ])
  )

/**
 * The Switchyard API itself, from the contract, for agents to operate Switchyard. It declares no security:
 * a connection to it stores no credentials, since every call is made as the caller (OwnApi).
 */
const switchyardDocument = (baseUrl: string) => {
  const spec = OpenApi.fromApi(Api) as any
  const { securitySchemes: _, ...components } = spec.components ?? {}
  return {
    ...spec,
    servers: [{ url: baseUrl }],
    info: { ...spec.info, title: "Switchyard" },
    components,
    security: [],
    paths: withoutSecurity(spec.paths ?? {})
  }
}

/** Upserts the connectors shipped with Switchyard; visible to every organization. */
export const BuiltinConnectorsLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const repo = yield* ConnectorRepo
    const config = yield* SwitchyardConfig
    const httpJson = Fs.readFileSync(Path.join(import.meta.dirname, "builtin", "http-json.yaml"), "utf8")
    const switchyard = switchyardDocument(config.baseUrl)
    const builtIns = [
      { id: HTTP_JSON_ID, document: { text: httpJson }, imported: importOpenApi(httpJson) },
      { id: SWITCHYARD_CONNECTOR_ID, document: switchyard, imported: importOpenApi(switchyard) }
    ]
    for (const b of builtIns) {
      yield* repo.upsertBuiltIn({ ...b, name: b.imported.title, description: b.imported.description })
    }
  }).pipe(Effect.orDie)
)
