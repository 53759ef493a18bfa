import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { Functions } from "./Functions.js"
import { FunctionsLive } from "./FunctionsLive.js"

export const FunctionsHttpLive = HttpApiBuilder.group(Api, "functions", (handlers) =>
  Effect.gen(function*() {
    const functions = yield* Functions
    const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Principal, f)
    return handlers
      .handle("listFunctions", ({ urlParams }) => as((p) => functions.list(p, urlParams)))
      .handle("createFunction", ({ payload }) => as((p) => functions.create(p, payload)))
      .handle("getFunction", ({ path, urlParams }) => as((p) => functions.get(p, path.function_id, urlParams.version)))
      .handle("listFunctionVersions", ({ path }) => as((p) => functions.versions(p, path.function_id)))
      .handle("updateFunction", ({ path, payload }) => as((p) => functions.update(p, path.function_id, payload)))
      .handle("deleteFunction", ({ path }) => as((p) => functions.remove(p, path.function_id)))
      .handle("invokeFunction", ({ path, payload, urlParams }) =>
        as((p) =>
          functions.invoke(p, path.function_id, payload.input, urlParams.version)
        ))
      .handle("listAgentFunctions", ({ path }) => as((p) => functions.attachedTo(p, path.agent_id)))
      .handle("attachFunction", ({ path }) => as((p) => functions.attach(p, path.agent_id, path.function_id)))
      .handle("detachFunction", ({ path }) => as((p) => functions.detach(p, path.agent_id, path.function_id)))
  })).pipe(Layer.provide(FunctionsLive))
