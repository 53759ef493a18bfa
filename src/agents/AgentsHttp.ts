import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Schema } from "effect"
import type { Task } from "../../schema/Agents.js"
import { TaskAccepted, taskLocation } from "../../schema/AgentsApi.js"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { acceptsEventStream } from "../events/EventStreamResponse.js"
import { InvokeStream } from "../events/InvokeStream.js"
import { Tasks } from "../tasks/Tasks.js"
import { Agents } from "./Agents.js"
import { AgentsLive } from "./AgentsLive.js"
import { ModelProviders } from "./ModelProviders.js"

const encodeAccepted = Schema.encode(TaskAccepted)

export const AgentsHttpLive = HttpApiBuilder.group(Api, "agents", (handlers) =>
  Effect.gen(function*() {
    const agents = yield* Agents
    const tasks = yield* Tasks
    const providers = yield* ModelProviders
    const invokeStream = yield* InvokeStream
    const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Principal, f)
    return handlers
      .handle("listAgents", ({ urlParams }) => as((p) => agents.list(p, urlParams)))
      .handle("createAgent", ({ payload }) => as((p) => agents.create(p, payload)))
      .handle("getAgent", ({ path }) => as((p) => agents.describe(p, path.agent_id)))
      .handle("updateAgent", ({ path, payload }) => as((p) => agents.update(p, path.agent_id, payload)))
      // what the agent left running or waiting for approval stops with it
      .handle("deleteAgent", ({ path }) =>
        as((p) =>
          Effect.zipRight(agents.remove(p, path.agent_id), tasks.cancelOfAgent(p.organizationId, path.agent_id))
        ))
      .handle("invokeAgent", ({ headers, path, payload, urlParams }) =>
        // `Accept: text/event-stream`: the task's events and the model's text as they come (issue 22)
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          urlParams.asynchronous !== "true" && acceptsEventStream(request.headers["accept"])
            ? as((p) =>
              invokeStream.invoke(p, path.agent_id, payload, headers["idempotency-key"])
            )
            : as((p) =>
              tasks.invoke(p, path.agent_id, payload, {
                asynchronous: urlParams.asynchronous === "true",
                idempotencyKey: headers["idempotency-key"],
                source: "api"
              })
            ).pipe(
              Effect.flatMap(({ accepted, task }): Effect.Effect<HttpServerResponse.HttpServerResponse | Task> =>
                accepted
                  ? encodeAccepted(new TaskAccepted(task)).pipe(
                    Effect.map((body) =>
                      HttpServerResponse.unsafeJson(body, { status: 202, headers: { location: taskLocation(task.id) } })
                    ),
                    Effect.orDie
                  )
                  : Effect.succeed(task)
              )
            )))
      .handle("listTasks", ({ urlParams }) =>
        as((p) =>
          tasks.list(p, urlParams)
        ))
      .handle("getTask", ({ path, urlParams }) => as((p) => tasks.get(p, path.task_id, urlParams.wait ?? 0)))
      .handle("cancelTask", ({ path }) => as((p) => tasks.cancel(p, path.task_id)))
      .handle("getThread", ({ path }) => as((p) => tasks.thread(p, path.task_id)))
      .handle("getLlmUsage", ({ path }) => as((p) => tasks.usage(p, path.task_id)))
      .handle("listModelProviders", () => as(providers.list))
      .handle("setModelProvider", ({ path, payload }) => as((p) => providers.set(p, path.provider, payload)))
      .handle("deleteModelProvider", ({ path }) => as((p) => providers.remove(p, path.provider)))
  })).pipe(Layer.provide(InvokeStream.Default), Layer.provide(AgentsLive))
