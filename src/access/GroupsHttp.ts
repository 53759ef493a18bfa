import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { Groups } from "./Groups.js"

export const GroupsHttpLive = HttpApiBuilder.group(Api, "groups", (handlers) =>
  Effect.gen(function*() {
    const groups = yield* Groups
    return handlers
      .handle("listGroups", ({ urlParams }) => Effect.flatMap(Principal, (p) => groups.list(p, urlParams)))
      .handle("createGroup", ({ payload }) => Effect.flatMap(Principal, (p) => groups.create(p, payload)))
      .handle("getGroup", ({ path }) => Effect.flatMap(Principal, (p) => groups.get(p, path.group_id)))
      .handle("updateGroup", ({ path, payload }) =>
        Effect.flatMap(Principal, (p) => groups.update(p, path.group_id, payload)))
      .handle("deleteGroup", ({ path }) =>
        Effect.flatMap(Principal, (p) => groups.remove(p, path.group_id)))
      .handle("listGroupMembers", ({ path, urlParams }) =>
        Effect.flatMap(Principal, (p) =>
          groups.members(p, path.group_id, urlParams)))
      .handle("addGroupMember", ({ path, payload }) =>
        Effect.flatMap(Principal, (p) =>
          groups.addMember(p, path.group_id, payload)))
      .handle("removeGroupMember", ({ path }) =>
        Effect.flatMap(Principal, (p) =>
          groups.removeMember(p, path.group_id, path.user_id)))
  })).pipe(Layer.provide(Groups.Default))
