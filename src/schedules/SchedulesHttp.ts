import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Schema } from "effect"
import { TaskAccepted, taskLocation } from "../../schema/AgentsApi.js"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { Schedules } from "./Schedules.js"
import { SchedulesLive } from "./SchedulesLive.js"

const encodeAccepted = Schema.encode(TaskAccepted)

export const SchedulesHttpLive = HttpApiBuilder.group(Api, "schedules", (handlers) =>
  Effect.gen(function*() {
    const schedules = yield* Schedules
    const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Principal, f)
    return handlers
      .handle("listSchedules", ({ urlParams }) => as((p) => schedules.list(p, urlParams)))
      .handle("createSchedule", ({ payload }) => as((p) => schedules.create(p, payload)))
      .handle("getSchedule", ({ path }) => as((p) => schedules.get(p, path.schedule_id)))
      .handle("updateSchedule", ({ path, payload }) => as((p) => schedules.update(p, path.schedule_id, payload)))
      .handle("deleteSchedule", ({ path }) => as((p) => schedules.remove(p, path.schedule_id)))
      .handle("pauseSchedule", ({ path }) => as((p) => schedules.pause(p, path.schedule_id)))
      .handle("resumeSchedule", ({ path }) => as((p) => schedules.resume(p, path.schedule_id)))
      .handle("triggerSchedule", ({ path }) =>
        as((p) => schedules.trigger(p, path.schedule_id)).pipe(
          Effect.flatMap((task) => Effect.orDie(encodeAccepted(new TaskAccepted(task)))),
          Effect.map((body) =>
            HttpServerResponse.unsafeJson(body, { status: 202, headers: { location: taskLocation(body.id) } })
          )
        ))
  })).pipe(Layer.provide(SchedulesLive))
