import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { CommandPolicies } from "./CommandPolicies.js"

const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Principal, f)

export const CommandsHttpLive = HttpApiBuilder.group(Api, "commands", (handlers) =>
  Effect.gen(function*() {
    const policies = yield* CommandPolicies
    return handlers
      .handle("getCommandPolicy", ({ path }) => as((p) => policies.get(p, path.agent_id)))
      .handle("putCommandPolicy", ({ path, payload }) => as((p) => policies.put(p, path.agent_id, payload)))
      .handle("checkCommand", ({ path, payload }) => as((p) => policies.check(p, path.agent_id, payload)))
  })).pipe(Layer.provide(CommandPolicies.Default))
