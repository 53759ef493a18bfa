import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { Conflict, Forbidden, NotFound } from "../../schema/Errors.js"
import type { AgentId, ScheduleId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { CreateSchedule, UpdateSchedule } from "../../schema/Schedules.js"
import type { Principal } from "../../schema/Security.js"
import { AgentRepo } from "../agents/AgentRepo.js"
import { mayUse, requireFilterAgent } from "../agents/Agents.js"
import { AuditLog, changedFields } from "../audit/AuditLog.js"
import { transactionIn } from "../db/Transaction.js"
import { requirePermission } from "../identity/IdentityPolicy.js"
import { listOrPage } from "../support/Cursor.js"
import { invalidField } from "../support/Issues.js"
import { type ScheduleFields, ScheduleRepo, type ScheduleWithLast } from "./ScheduleRepo.js"
import {
  DEFAULT_CATCHUP_MS,
  durationOf,
  jitterFits,
  nextFrom,
  overlapOf,
  timingOf,
  toSchedule,
  zoneName
} from "./ScheduleRules.js"
import { keyMayNotUse, ScheduleRuns } from "./ScheduleRuns.js"

/** Whether a change leaves an enabled schedule enabled, on the same timing (so on the same next run). */
type Timed = Omit<ScheduleFields, "next_tick" | "next_run_at">
const sameTiming = (current: Timed, fields: Timed) =>
  current.enabled && fields.enabled && current.cron === fields.cron && current.every_ms === fields.every_ms &&
  current.timezone === fields.timezone && current.jitter_ms === fields.jitter_ms &&
  current.start_at?.getTime() === fields.start_at?.getTime() && current.end_at?.getTime() === fields.end_at?.getTime()

/** Whether a change's fields are the schedule's own already. */
const unchanged = (current: Timed, fields: Timed) =>
  current.name === fields.name && current.agent_id === fields.agent_id && current.cron === fields.cron &&
  current.every_ms === fields.every_ms && current.timezone === fields.timezone &&
  current.input_text === fields.input_text && current.user_id === fields.user_id &&
  current.user_email === fields.user_email && current.enabled === fields.enabled &&
  current.start_at?.getTime() === fields.start_at?.getTime() &&
  current.end_at?.getTime() === fields.end_at?.getTime() &&
  current.jitter_ms === fields.jitter_ms && current.overlap === fields.overlap &&
  current.catchup_window_ms === fields.catchup_window_ms

/**
 * Schedules (issue 24): an agent run on a cron expression or an interval, each run a task with
 * `source: "schedule"`. Anyone who may use the agent reads its schedules; Builders and above change them.
 */
export class Schedules extends Effect.Service<Schedules>()("schedules/Schedules", {
  effect: Effect.gen(function*() {
    const repo = yield* ScheduleRepo
    const agents = yield* AgentRepo
    const audit = yield* AuditLog
    const runs = yield* ScheduleRuns
    const transaction = transactionIn(yield* SqlClient.SqlClient)

    /** The agent, if it is one of the organization's that the principal may use; else a 404 naming it. */
    const usableAgent = (principal: Principal, id: AgentId) =>
      (mayUse(principal, id) ? agents.find(principal.organizationId, id) : Effect.succeed(undefined)).pipe(
        Effect.flatMap((row) => row === undefined ? Effect.fail(NotFound.of("Agent", id)) : Effect.void)
      )

    /**
     * A schedule whose agent was deleted may not run again (paused by the delete): enabling it, or a manual run,
     * is a 409 saying so, until it is pointed at another agent.
     */
    const agentLives = (principal: Principal, schedule: { readonly id: ScheduleId; readonly agent_id: AgentId }) =>
      Effect.flatMap(agents.find(principal.organizationId, schedule.agent_id), (row) =>
        row === undefined
          ? Effect.fail(Conflict.of(
            `Schedule '${schedule.id}' cannot run: its agent '${schedule.agent_id}' was deleted. Point it at ` +
              "another agent (`agent_id`), or delete it.",
            "schedule_agent_deleted"
          ))
          : Effect.void)

    /** Runs are invoked as the creator: turned on after they left or stopped being a Builder, it would only fail. */
    const creatorMayRun = (schedule: ScheduleWithLast) =>
      Effect.flatMap(
        runs.creatorGone(schedule),
        (reason) => reason === undefined ? Effect.void : Effect.fail(Conflict.of(`The schedule cannot run: ${reason}`))
      )

    /**
     * Runs are invoked as the creator: one made by an organization key limited to agents may not be pointed at an
     * agent outside them, whoever changes it (403, as for a key it would create).
     */
    const creatorMayUse = (schedule: ScheduleWithLast, agentId: AgentId) =>
      Effect.flatMap(runs.creatorAgents(schedule), (agents) =>
        agents === null || agents.includes(agentId)
          ? Effect.void
          : Effect.fail(Forbidden.of(keyMayNotUse(agentId, agents))))

    const find = (principal: Principal, id: ScheduleId, lock = false) =>
      Effect.flatMap(
        repo.find(principal.organizationId, id, lock),
        (row): Effect.Effect<ScheduleWithLast, NotFound> =>
          row === undefined || !mayUse(principal, row.agent_id)
            ? Effect.fail(NotFound.of("Schedule", id))
            : Effect.succeed(row)
      )

    /**
     * The fields checked (each wrong one a 400 naming it), with the next run computed from now. The jitter is
     * checked against the timing when either is set (`timed`): a schedule saved before that check is still
     * paused, resumed and renamed.
     */
    const checked = (
      id: ScheduleId,
      fields: Omit<ScheduleFields, "next_tick" | "next_run_at">,
      anchor: Date,
      timed: boolean
    ) =>
      Effect.gen(function*() {
        const timing = yield* timingOf(fields, anchor)
        const now = new Date()
        if (timed) yield* jitterFits(timing, fields.jitter_ms, now)
        return { ...fields, ...nextFrom(id, fields, timing, now) }
      })

    const durations = (input: {
      readonly every?: string | undefined
      readonly jitter?: string | null | undefined
      readonly catchup_window?: string | undefined
    }) =>
      Effect.all({
        every: input.every === undefined ? Effect.succeed(undefined) : durationOf("every", input.every, 1000),
        jitter: input.jitter === undefined || input.jitter === null
          ? Effect.succeed(input.jitter === null ? 0 : undefined)
          : durationOf("jitter", input.jitter, 0),
        catchup: input.catchup_window === undefined
          ? Effect.succeed(undefined)
          : durationOf("catchup_window", input.catchup_window, 0)
      })

    /** An `end_at` given now must be ahead: one already past makes a schedule that never runs, silently. */
    const endAhead = (endAt: Date | null | undefined, now: Date) =>
      endAt !== undefined && endAt !== null && endAt.getTime() <= now.getTime()
        ? invalidField("end_at", `is in the past (${endAt.toISOString()}): the schedule would never run.`)
        : Effect.void

    const create = Effect.fn("Schedules.create")(function*(principal: Principal, input: CreateSchedule) {
      yield* requirePermission(principal, Policy.createSchedules)
      yield* usableAgent(principal, input.agent_id)
      const id = Crypto.randomUUID() as ScheduleId
      const now = new Date()
      yield* endAhead(input.end_at, now)
      const d = yield* durations(input)
      const fields = yield* checked(
        id,
        {
          name: input.name,
          agent_id: input.agent_id,
          cron: input.cron ?? null,
          every_ms: d.every ?? null,
          timezone: zoneName(input.timezone ?? "UTC"),
          input_text: input.input.text,
          user_id: input.input.user.id,
          user_email: input.input.user.email,
          enabled: input.enabled ?? true,
          start_at: input.start_at ?? null,
          end_at: input.end_at ?? null,
          jitter_ms: d.jitter ?? 0,
          overlap: overlapOf(input.overlap),
          catchup_window_ms: d.catchup ?? DEFAULT_CATCHUP_MS
        },
        now,
        true
      )
      const row = yield* repo.insert({
        ...fields,
        id,
        organization_id: principal.organizationId,
        created_by: principal.userId,
        created_by_key: principal.keyId,
        created_at: now
      }).pipe(audit.recorded(principal, (row) => ({
        action: "CREATE_SCHEDULE",
        targets: [{ type: "schedule", id: row.id, name: row.name }],
        details: { agent_id: row.agent_id, cron: row.cron, every_ms: row.every_ms, timezone: row.timezone }
      })))
      yield* repo.wake
      return toSchedule(row, new Date())
    })

    /** A change of the schedule's fields: its next run is computed again from now if its timing changed. */
    const change = (principal: Principal, id: ScheduleId, input: UpdateSchedule, action: string) =>
      Effect.gen(function*() {
        const { row, written } = yield* transaction(changeLocked(principal, id, input, action))
        if (written) yield* repo.wake
        return toSchedule(row, new Date())
      })

    /**
     * The change, with the schedule's row locked from its read to its write: two changes at once (a pause and a
     * rename) each apply to what the other wrote, rather than the later writing back what the earlier changed.
     */
    const changeLocked = (principal: Principal, id: ScheduleId, input: UpdateSchedule, action: string) =>
      Effect.gen(function*() {
        const current = yield* find(principal, id, true)
        if (input.agent_id !== undefined) yield* usableAgent(principal, input.agent_id)
        if (input.agent_id !== undefined && input.agent_id !== current.agent_id) {
          yield* creatorMayUse(current, input.agent_id)
        }
        if (input.cron !== undefined && input.every !== undefined) {
          return yield* invalidField("", "Give one of `cron` and `every`, not both.")
        }
        yield* endAhead(input.end_at, new Date())
        const d = yield* durations(input)
        const fields = yield* checked(
          id,
          {
            name: input.name ?? current.name,
            agent_id: input.agent_id ?? current.agent_id,
            cron: input.every !== undefined ? null : input.cron ?? current.cron,
            every_ms: input.cron !== undefined ? null : d.every ?? current.every_ms,
            timezone: input.timezone === undefined ? current.timezone : zoneName(input.timezone),
            input_text: input.input?.text ?? current.input_text,
            user_id: input.input?.user.id ?? current.user_id,
            user_email: input.input?.user.email ?? current.user_email,
            enabled: input.enabled ?? current.enabled,
            start_at: input.start_at === undefined ? current.start_at : input.start_at,
            end_at: input.end_at === undefined ? current.end_at : input.end_at,
            jitter_ms: d.jitter ?? current.jitter_ms,
            overlap: input.overlap ?? current.overlap,
            catchup_window_ms: d.catchup ?? current.catchup_window_ms
          },
          current.created_at,
          [input.cron, input.every, input.jitter, input.timezone].some((v) => v !== undefined)
        )
        if (fields.enabled && input.agent_id === undefined) yield* agentLives(principal, current)
        // as it will be: pointed back at an agent its creator may use, it may run again
        if (fields.enabled && !current.enabled) yield* creatorMayRun({ ...current, agent_id: fields.agent_id })
        // nothing to change (`{}`, what it holds already, a pause of a paused one): not written, nothing audited
        if (unchanged(current, fields)) return { row: current, written: false }
        // the timing as it was, still running: its next run stays (a jittered run whose tick passed, a buffered
        // one's recheck); computed again from now, a rename would drop it
        const { next_run_at: _nextRunAt, next_tick: _nextTick, ...untimed } = fields
        const row = yield* repo.update(principal.organizationId, id, sameTiming(current, fields) ? untimed : fields)
          .pipe(
            audit.recorded(principal, (row) =>
              row === undefined || changedFields(input).length === 0 ? undefined : {
                action,
                targets: [{ type: "schedule", id, name: row.name }],
                details: { changed: changedFields(input) }
              })
          )
        if (row === undefined) return yield* NotFound.of("Schedule", id)
        return { row, written: true }
      })

    const update = Effect.fn("Schedules.update")(
      function*(principal: Principal, id: ScheduleId, input: UpdateSchedule) {
        yield* requirePermission(principal, Policy.changeSchedules)
        return yield* change(principal, id, input, "UPDATE_SCHEDULE")
      }
    )

    const pause = Effect.fn("Schedules.pause")(function*(principal: Principal, id: ScheduleId) {
      yield* requirePermission(principal, Policy.pauseSchedules)
      return yield* change(principal, id, { enabled: false }, "PAUSE_SCHEDULE")
    })

    const resume = Effect.fn("Schedules.resume")(function*(principal: Principal, id: ScheduleId) {
      yield* requirePermission(principal, Policy.resumeSchedules)
      return yield* change(principal, id, { enabled: true }, "RESUME_SCHEDULE")
    })

    const remove = Effect.fn("Schedules.remove")(function*(principal: Principal, id: ScheduleId) {
      yield* requirePermission(principal, Policy.deleteSchedules)
      const current = yield* find(principal, id)
      yield* repo.remove(principal.organizationId, id).pipe(
        audit.recorded(
          principal,
          (removed) =>
            removed ? { action: "DELETE_SCHEDULE", targets: [{ type: "schedule", id, name: current.name }] } : undefined
        )
      )
    })

    /** Every schedule the principal may see, or with `limit` a page of them (`total` counts them all). */
    const list = Effect.fn("Schedules.list")(function*(
      principal: Principal,
      params: {
        readonly agent_id?: AgentId | undefined
        readonly limit?: number | undefined
        readonly cursor?: string | undefined
      }
    ) {
      const now = new Date()
      const { agentIds, organizationId } = principal
      // an agent it cannot see is 404, as for tasks, usage and events
      if (params.agent_id !== undefined) yield* requireFilterAgent(agents, principal, params.agent_id)
      const { next_cursor, rows, total } = yield* listOrPage(
        params,
        (page) => repo.list(organizationId, agentIds, params.agent_id, page),
        repo.count(organizationId, agentIds, params.agent_id)
      )
      return { items: rows.map((row) => toSchedule(row, now)), total, next_cursor }
    })

    const get = (principal: Principal, id: ScheduleId) =>
      Effect.map(find(principal, id), (row) => toSchedule(row, new Date()))

    /** Runs the schedule now, whatever its overlap policy and also while paused: the task, pending. */
    const trigger = Effect.fn("Schedules.trigger")(function*(principal: Principal, id: ScheduleId) {
      yield* requirePermission(principal, Policy.triggerSchedules)
      const schedule = yield* find(principal, id)
      yield* agentLives(principal, schedule)
      let scheduledFor = yield* repo.insertManual(id)
      while (scheduledFor === undefined) {
        yield* Effect.sleep("1 millis")
        scheduledFor = yield* repo.insertManual(id)
      }
      // deleted since it was read: as if the delete came first
      if (scheduledFor === "gone") return yield* NotFound.of("Schedule", id)
      const [outcome] = yield* runs.run([{ schedule, scheduled_for: scheduledFor }])
      if (outcome === undefined) return yield* Effect.dieMessage(`schedule ${id}: the manual run was not made`)
      if (outcome.task !== undefined) {
        // the task is invoked as the schedule's creator: the record says who had it made
        yield* audit.record(principal, {
          action: "TRIGGER_SCHEDULE",
          targets: [{ type: "schedule", id, name: schedule.name }, { type: "task", id: outcome.task.id }]
        })
        return outcome.task
      }
      if (outcome.error !== undefined) return yield* Effect.fail(outcome.error)
      // refused before any invoke (its creator left or is no Builder any more): the run paused the schedule
      return yield* (outcome.reason === null
        ? Effect.dieMessage(`schedule ${id}: the manual run has no task`)
        : Conflict.of(`The schedule cannot run: ${outcome.reason}`))
    })

    return { create, update, pause, resume, remove, list, get, trigger } as const
  })
}) {}
