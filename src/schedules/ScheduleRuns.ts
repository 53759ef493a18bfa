import { SqlClient } from "@effect/sql"
import { Effect, Either, Exit } from "effect"
import * as Crypto from "node:crypto"
import { startRun, TaskEntity } from "../../cluster/TaskEntity.js"
import type { Task } from "../../schema/Agents.js"
import type { Role } from "../../schema/Identity.js"
import type { AgentId, ApiKeyId, TaskId } from "../../schema/Ids.js"
import { holds, Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { AgentRepo } from "../agents/AgentRepo.js"
import { AuditLog } from "../audit/AuditLog.js"
import { transactionIn } from "../db/Transaction.js"
import { IdentityRepo } from "../identity/IdentityRepo.js"
import { TaskPlacement } from "../tasks/TaskPlacement.js"
import { TaskRuns } from "../tasks/TaskRuns.js"
import { Tasks } from "../tasks/Tasks.js"
import {
  AGENT_DELETED,
  type ClaimedForBulk,
  type OpenTick,
  ScheduleRepo,
  type ScheduleRow,
  tickKey,
  type TickStatus,
  type TickTask
} from "./ScheduleRepo.js"

/**
 * Who a schedule's runs are invoked as: its creator (their key: they may cancel the runs as their own), scoped
 * to nothing but the schedule's agent, which the creator's key may use (checked when the schedule is made or
 * pointed at it, and by `creatorGone` at each run).
 */
const principalOf = (schedule: ScheduleRow): Principal => ({
  organizationId: schedule.organization_id,
  userId: schedule.created_by,
  keyId: schedule.created_by_key as ApiKeyId,
  role: "builder",
  agentIds: [schedule.agent_id]
})

/**
 * Why a schedule made by an organization key limited to agents may not run `agentId`: its runs are invoked as
 * that key, which may not (an Admin pointed it there, or it was stored so before that was refused).
 */
export const keyMayNotUse = (agentId: AgentId, keyAgents: ReadonlyArray<AgentId>) =>
  `The organization key that created the schedule may not use agent '${agentId}' (it is limited to ${
    keyAgents.join(", ") || "no agents"
  }), and the schedule's runs are invoked as that key. Point the schedule at one of those agents, or recreate ` +
  "it with a key that may use this one."

/** Who pauses a schedule that may not run, in the audit log. */
const SCHEDULER = { type: "system", id: "scheduler", key_id: null } as const
const NO_REQUEST = { ip: null, userAgent: null, requestId: null }

export interface RunOutcome {
  readonly tick: OpenTick
  readonly status: TickStatus
  /** The task as invoked (undefined when it was found made earlier: `taskId` only). */
  readonly task: Task | undefined
  readonly taskId: TaskId | null
  readonly reason: string | null
  /** Why no task was made (`failed`). */
  readonly error?: InvokeError
}

type InvokeError = Effect.Effect.Error<ReturnType<Tasks["invoke"]>>

/** How long handing a run to another node's Task entity may take; past it, that node's sweep starts it. */
const DELIVERY_TIMEOUT = "2 seconds"

/**
 * The request hash `Tasks.invoke` records for a keyed task, for the same agent and input: a tick's task made
 * in bulk and one made by the invoke path (the sweep, after a node died) compare equal.
 */
const requestHashOf = (schedule: ScheduleRow) =>
  Crypto.createHash("sha256").update(JSON.stringify([
    schedule.agent_id,
    { text: schedule.input_text, user: { id: schedule.user_id, email: schedule.user_email } }
  ])).digest("base64url")

/**
 * Whether the claim may make the schedule's tick into its task in bulk: its agent has no budget (the invoke
 * path checks spending first) and its creator is still a Builder, or its key not revoked and allowed its agent
 * (else the invoke path pauses it, saying why).
 */
const bulkable = (schedule: ClaimedForBulk) =>
  schedule.plain_agent &&
  (schedule.created_by === null ?
    !schedule.creator_key_barred :
    (schedule.creator_role !== null &&
      holds(schedule.creator_role as Role, Policy.createSchedules)))

/**
 * Makes ticks into tasks: the one core for the scheduler's runs, the runs a dead node left, and manual
 * triggers. Each tick's task goes through `Tasks.invoke` (asynchronous) with the tick's own idempotency key,
 * derived from (schedule, scheduled_for): making a tick twice, on one node or two, gives its one task.
 */
export class ScheduleRuns extends Effect.Service<ScheduleRuns>()("schedules/ScheduleRuns", {
  effect: Effect.gen(function*() {
    const repo = yield* ScheduleRepo
    const tasks = yield* Tasks
    const identity = yield* IdentityRepo
    const agents = yield* AgentRepo
    const placement = yield* TaskPlacement
    const taskRuns = yield* TaskRuns
    const client = yield* TaskEntity.client
    const audit = yield* AuditLog
    const transaction = transactionIn(yield* SqlClient.SqlClient)

    /**
     * Why the schedule may not run any more, if so: its creator left the organization or is no longer a
     * Builder, or the organization key that made it was revoked or may not use its agent (runs are invoked as
     * them, so they stop with their rights, and the schedule is paused); or its agent is gone (`agentGone`).
     */
    const creatorGone = (schedule: ScheduleRow) =>
      schedule.created_by === null
        ? Effect.map(identity.findApiKey(schedule.organization_id, schedule.created_by_key as ApiKeyId), (key) =>
          key === undefined
            ? undefined
            : key.revoked_at !== null
            ? "The organization key that created the schedule was revoked; a Builder can recreate it."
            : key.agent_ids !== null && !key.agent_ids.includes(schedule.agent_id)
            ? keyMayNotUse(schedule.agent_id, key.agent_ids)
            : undefined)
        : Effect.map(identity.findMember(schedule.organization_id, schedule.created_by), (member) =>
          member === undefined
            ? "The schedule's creator is no longer a member of the organization; a Builder can recreate it."
            : holds(member.role, Policy.createSchedules)
            ? undefined
            : "The schedule's creator is no longer a Builder; a Builder can recreate it.")

    /** The agents the schedule's runs may be invoked on: an organization key's own list; null: any. */
    const creatorAgents = (schedule: ScheduleRow) =>
      schedule.created_by === null
        ? Effect.map(
          identity.findApiKey(schedule.organization_id, schedule.created_by_key as ApiKeyId),
          (key) => key?.agent_ids ?? null
        )
        : Effect.succeed(null)

    /** Its agent was deleted (a schedule paused before its agent's delete did so): it would fail every run. */
    const agentGone = (schedule: ScheduleRow) =>
      Effect.map(
        agents.find(schedule.organization_id, schedule.agent_id),
        (agent) => agent === undefined ? AGENT_DELETED : undefined
      )

    /**
     * Pauses the schedule, which may not run (`reason`): it would only fail again, and resuming it is refused
     * with the same answer. Audited, by the scheduler, when this paused it (not when it was paused already).
     */
    const pause = (schedule: ScheduleRow, reason: string) =>
      transaction(
        Effect.flatMap(repo.disable(schedule.id), (paused) =>
          paused === undefined ?
            Effect.void :
            audit.record({ organizationId: paused.organization_id, actor: SCHEDULER }, {
              action: "PAUSE_SCHEDULE",
              targets: [{ type: "schedule", id: schedule.id, name: paused.name }],
              details: { reason, agent_id: schedule.agent_id }
            }, NO_REQUEST))
      )

    const runOne = (tick: OpenTick, gone: (schedule: ScheduleRow) => Effect.Effect<string | undefined>) =>
      Effect.flatMap(gone(tick.schedule), (reason): Effect.Effect<RunOutcome> =>
        reason === undefined
          ? invokeOne(tick)
          : Effect.as(
            pause(tick.schedule, reason),
            { tick, status: "failed", task: undefined, taskId: null, reason } satisfies RunOutcome
          ))

    const invokeOne = (tick: OpenTick): Effect.Effect<RunOutcome> => {
      const { schedule } = tick
      const key = tickKey(schedule.id, tick.scheduled_for)
      return tasks.invoke(
        principalOf(schedule),
        schedule.agent_id,
        { input: { text: schedule.input_text, user: { id: schedule.user_id, email: schedule.user_email } } },
        { asynchronous: true, idempotencyKey: key, source: "schedule", scheduleId: schedule.id }
      ).pipe(
        Effect.either,
        Effect.flatMap((result) => {
          if (Either.isRight(result)) {
            const task = result.right.task
            return Effect.succeed<RunOutcome>({ tick, status: "fired", task, taskId: task.id, reason: null })
          }
          // the tick's task may exist though this call could not make it (made under an earlier input, or by a
          // node making the same tick at this moment): then that is its run
          return Effect.map(repo.taskByKey(schedule.organization_id, key), (id): RunOutcome =>
            id === undefined
              ? {
                tick,
                status: "failed",
                task: undefined,
                taskId: null,
                reason: result.left.message,
                error: result.left
              }
              : { tick, status: "fired", task: undefined, taskId: id, reason: null })
        })
      )
    }

    /** Makes the ticks, and records each outcome on its tick. A defect leaves its tick pending, for the sweep. */
    const run = (ticks: ReadonlyArray<OpenTick>) =>
      Effect.gen(function*() {
        // one look per creator and per agent in a batch: a claim of thousands of ticks is mostly a few people's
        // schedules of a few agents
        const looked = new Map<string, Effect.Effect<string | undefined>>()
        const once = (key: string, look: Effect.Effect<string | undefined>) => {
          let found = looked.get(key)
          if (found === undefined) {
            found = Effect.runSync(Effect.cached(look))
            looked.set(key, found)
          }
          return found
        }
        const gone = (schedule: ScheduleRow) =>
          Effect.flatMap(
            once(`agent:${schedule.agent_id}`, agentGone(schedule)),
            (reason) =>
              reason !== undefined
                ? Effect.succeed(reason)
                : once(
                  // an organization key's answer depends on the agent too (the key may be limited to agents)
                  schedule.created_by === null
                    ? `key:${schedule.organization_id}:${schedule.created_by_key}:${schedule.agent_id}`
                    : `creator:${schedule.organization_id}:${schedule.created_by}`,
                  creatorGone(schedule)
                )
          )
        const outcomes = yield* Effect.forEach(
          ticks,
          (tick) => runOne(tick, gone).pipe(Effect.exit),
          { concurrency: 64 }
        )
        const done: Array<RunOutcome> = []
        for (const exit of outcomes) {
          if (Exit.isSuccess(exit)) done.push(exit.value)
          else yield* Effect.logWarning("a scheduled run could not be made; the sweep makes it later", exit.cause)
        }
        yield* repo.settle(done.map((o) => ({
          schedule_id: o.tick.schedule.id,
          scheduled_for: o.tick.scheduled_for,
          status: o.status,
          task_id: o.taskId,
          reason: o.reason
        })))
        return done
      })

    /**
     * The bulk path's tasks for the ticks to make now (`pending`) of schedules it may make: each a new id on
     * this node's shards (it runs here), as `Tasks.invoke` would pick it.
     */
    const tickTasks = (
      claimed: ReadonlyArray<ClaimedForBulk>,
      ticks: ReadonlyArray<{ schedule_id: ScheduleRow["id"]; scheduled_for: Date; status: TickStatus }>
    ): Array<TickTask> => {
      const byId = new Map(claimed.map((s) => [s.id, s]))
      // one hash per agent and input in the claim (copies of one schedule share it)
      const hashes = new Map<string, string>()
      const hashOf = (s: ScheduleRow) => {
        const key = JSON.stringify([s.agent_id, s.input_text, s.user_id, s.user_email])
        let hash = hashes.get(key)
        if (hash === undefined) {
          hash = requestHashOf(s)
          hashes.set(key, hash)
        }
        return hash
      }
      const tasks: Array<TickTask> = []
      for (const tick of ticks) {
        const schedule = byId.get(tick.schedule_id)
        if (tick.status !== "pending" || schedule === undefined || !bulkable(schedule)) continue
        const id = placement.newId()
        tasks.push({
          schedule_id: tick.schedule_id,
          scheduled_for: tick.scheduled_for,
          id,
          shard: placement.shardOf(id),
          request_hash: hashOf(schedule)
        })
      }
      return tasks
    }

    /**
     * Hands the tasks made in bulk (committed, `pending`) to their Task entities: a run here is forked; one on
     * a shard that moved is delivered, bounded. Whatever is not started here is started by its shard's sweep.
     */
    const start = (ids: ReadonlyArray<TaskId>) =>
      Effect.forEach(ids, (id) =>
        taskRuns.shardIsHere(id)
          ? Effect.asVoid(taskRuns.start(id))
          : startRun(client, id, DELIVERY_TIMEOUT), { discard: true, concurrency: 16 })

    return { run, tickTasks, start, creatorGone, creatorAgents } as const
  })
}) {}
