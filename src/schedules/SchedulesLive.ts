import { Layer } from "effect"
import { AgentsLive } from "../agents/AgentsLive.js"
import { AuditLog } from "../audit/AuditLog.js"
import { IdentityRepo } from "../identity/IdentityRepo.js"
import { SchedulerLive } from "./Scheduler.js"
import { ScheduleRepo } from "./ScheduleRepo.js"
import { ScheduleRuns } from "./ScheduleRuns.js"
import { Schedules } from "./Schedules.js"

/** Schedules: the service the API and the MCP tools call, and this node's scheduler. One of each per node. */
export const SchedulesLive = Layer.mergeAll(Schedules.Default, SchedulerLive).pipe(
  Layer.provideMerge(ScheduleRuns.Default),
  Layer.provideMerge(Layer.mergeAll(ScheduleRepo.Default, AuditLog.Default, IdentityRepo.Default)),
  Layer.provideMerge(AgentsLive)
)
