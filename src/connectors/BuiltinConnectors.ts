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
const SWITCHYARD_ID = "5e1f0000-0000-4000-8000-000000000002" as ConnectorId

/** The Switchyard API itself, from the contract: agents can operate Switchyard with a key of the user's. */
const switchyardDocument = (baseUrl: string) => {
  const spec = OpenApi.fromApi(Api) as any
  return { ...spec, servers: [{ url: baseUrl }], info: { ...spec.info, title: "Switchyard" } }
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
      { id: SWITCHYARD_ID, document: switchyard, imported: importOpenApi(switchyard) }
    ]
    for (const b of builtIns) {
      yield* repo.upsertBuiltIn({ ...b, name: b.imported.title, description: b.imported.description })
    }
  }).pipe(Effect.orDie)
)
