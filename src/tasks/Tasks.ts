import { Duration, Effect } from "effect"
import { constVoid } from "effect/Function"
import * as Crypto from "node:crypto"
import { outcomeOf, startRun, TaskEntity } from "../../cluster/TaskEntity.js"
import { budgetText, type InvokeAgent, Task, type TaskFields, ThreadEvent } from "../../schema/Agents.js"
import { BadRequest, Conflict, Forbidden, NotFound, PaymentRequired } from "../../schema/Errors.js"
import type { AgentId, OrganizationId, ScheduleId, TaskId } from "../../schema/Ids.js"
import { holds, Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { AgentRepo, type AgentRow } from "../agents/AgentRepo.js"
import { mayUse, requireFilterAgent } from "../agents/Agents.js"
import { BudgetLeases } from "../agents/BudgetLeases.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { CredentialVault } from "../connectors/CredentialVault.js"
import { pageOf, positionOf } from "../support/Cursor.js"
import { rangeForwards } from "../support/TimeRange.js"
import { roundUsd } from "../support/Usd.js"
import { LocalTasks } from "./LocalTasks.js"
import { RECHECK_MS, TaskCompletions } from "./TaskCompletions.js"
import { TaskPlacement } from "./TaskPlacement.js"
import { TaskRepo, type TaskSummary } from "./TaskRepo.js"
import { TaskRuns } from "./TaskRuns.js"

/** A task's fields from its row. */
const fieldsOf = (row: TaskSummary): TaskFields => ({
  id: row.id,
  agent_id: row.agent_id,
  agent_version: row.agent_version,
  status: row.status,
  result: row.result,
  error_code: row.error_code,
  source: row.source,
  ...(row.schedule_id === null ? {} : { schedule_id: row.schedule_id }),
  user: { id: row.user_id, email: row.user_email },
  created_at: row.created_at,
  finished_at: row.finished_at
})

/** Rows are trusted: the constructor's validation (a Schema pass per task) is skipped. */
export const toTask = (row: TaskSummary) => new Task(fieldsOf(row), true)

const TERMINAL = new Set(["completed", "error", "cancelled"])

/** An answer cut off at the output limit says so: the model call that gave it stopped for `length`. */
const truncation = (events: ReadonlyArray<{ readonly type: string; readonly data: any }>) =>
  events.filter((e) => e.type === "model_call").at(-1)?.data?.finish === "length" ? { truncated: true } : {}

/** How long an async invoke waits to hand its task over; past it, the owner's sweep starts the task. */
const DELIVERY_TIMEOUT = Duration.seconds(2)

/** Invoking agents (spec 4.6) and reading tasks (4.7): every invocation is a task on a Task entity. */
export class Tasks extends Effect.Service<Tasks>()("tasks/Tasks", {
  effect: Effect.gen(function*() {
    const repo = yield* TaskRepo
    const agentRepo = yield* AgentRepo
    const vault = yield* CredentialVault
    const client = yield* TaskEntity.client
    const completions = yield* TaskCompletions
    const config = yield* SwitchyardConfig
    const local = yield* LocalTasks
    const runs = yield* TaskRuns
    const placement = yield* TaskPlacement
    const leases = yield* BudgetLeases

    /** The task as `read` finds it in the principal's organization, if the principal may see it. */
    const authorized = <R extends TaskSummary, E>(
      principal: Principal,
      id: TaskId,
      read: Effect.Effect<R | undefined, E>
    ) =>
      Effect.flatMap(
        read,
        (row) =>
          row === undefined || !mayUse(principal, row.agent_id)
            ? Effect.fail(NotFound.of("Task", id))
            : Effect.succeed(row)
      )

    const find = (principal: Principal, id: TaskId) =>
      authorized(principal, id, repo.find(principal.organizationId, id))

    /** Fails with 402 when the agent's budget for this period is spent; a missing agent is a 404. */
    const budgetRoom = (agentId: AgentId, agent: AgentRow | null) =>
      Effect.gen(function*() {
        if (agent === null) return yield* NotFound.of("Agent", agentId)
        if (agent.budget === null) return
        const { exhausted, spent } = yield* agentRepo.spending(agent.id, agent.budget)
        if (exhausted || spent >= agent.budget.limit_usd) {
          const { limit_usd, period } = agent.budget
          // a budget in total has no next period to wait for
          const orWait = period === "total" ? "" : ` or wait for the next ${period}`
          return yield* PaymentRequired.of(
            spent >= limit_usd
              ? `The agent's budget of ${budgetText(agent.budget)} is exhausted ($${spent.toFixed(6)} spent). ` +
                `Raise it with PATCH /v1/agents/{agent_id}${orWait}.`
              // refused earlier for a call whose worst case did not fit what was left
              : `The agent's budget of ${budgetText(agent.budget)} has no room left for a model call's worst case ` +
                `($${spent.toFixed(6)} spent; each call reserves its worst case first). Raise the budget, or lower ` +
                `the worst case with the model's max_output_tokens (PATCH /v1/agents/{agent_id})${orWait}.`,
            { limit_usd, spent_usd: spent, period }
          )
        }
      })

    // untraced: once per task, and a span per call (with its captured stack) is a cost nobody reads here
    const invoke = Effect.fnUntraced(function*(
      principal: Principal,
      agentId: AgentId,
      body: InvokeAgent,
      options: {
        readonly asynchronous: boolean
        readonly idempotencyKey: string | undefined
        readonly source: "api" | "mcp" | "schedule"
        /** A schedule's run: its key is the scheduler's own (src/schedules/Scheduler.ts), not a client's. */
        readonly scheduleId?: ScheduleId | undefined
        /** Told the new task's id before it can run: a streamed invoke listens to its output from its first call. */
        readonly created?: ((id: TaskId) => void) | undefined
      }
    ) {
      if (!mayUse(principal, agentId)) return yield* NotFound.of("Agent", agentId)
      if (
        options.idempotencyKey !== undefined && options.source !== "schedule" &&
        !/^[\x21-\x7e]{1,255}$/.test(options.idempotencyKey)
      ) {
        return yield* BadRequest.of(
          "`Idempotency-Key` must be 1–255 visible ASCII characters.",
          undefined,
          "invalid_idempotency_key"
        )
      }
      // time-ordered (UUIDv7): a new task's keys land at the right edge of the indexes keyed by task id
      // (tasks, thread events, usage records) instead of on a random page of each; and on this node's shards,
      // so that it runs here (TaskPlacement)
      const id = placement.newId()
      options.created?.(id)
      // only a keyed request is compared with a later one
      const requestHash = options.idempotencyKey === undefined
        ? null
        : Crypto.createHash("sha256").update(JSON.stringify([agentId, body.input])).digest("base64url")
      const fields = {
        id,
        organization_id: principal.organizationId,
        agent_id: agentId,
        source: options.source,
        schedule_id: options.scheduleId ?? null,
        user_id: body.input.user.id,
        user_email: body.input.user.email,
        input: body.input.text,
        api_key_id: principal.keyId,
        invoker_user_id: principal.userId,
        invoker_agent_ids: principal.agentIds,
        // the user's token lives sealed only while the task runs: ending the task erases it
        oidc_token: body.user_oidc_token === undefined
          ? null
          : vault.seal(body.user_oidc_token, [principal.organizationId, id, "oidc"]).sealed,
        idempotency_key: options.idempotencyKey ?? null,
        request_hash: requestHash
      }
      // a task on this node's shards runs here directly; any other goes to its Task entity's node
      const here = runs.shardIsHere(id)
      // a task run here starts at once: it is inserted started, one commit fewer
      const first = yield* repo.insert(fields, leases.hasRoom(agentId), here, placement.shardOf(id))
      // an agent with a budget: its task is inserted once the budget is known to have room
      const row = first.task ??
        (yield* Effect.flatMap(
          budgetRoom(agentId, first.agent),
          () => repo.insert(fields, true, here, placement.shardOf(id))
        ))
          .task
      if (row === undefined) return yield* NotFound.of("Agent", agentId)
      if (!row.inserted && row.request_hash !== requestHash) {
        return yield* Conflict.of("This Idempotency-Key was used with a different request.", "idempotency_conflict")
      }
      if (row.inserted && here) {
        local.offer(row, row.attached ?? undefined)
        // its readers are answered from what this node knows, not by reading it
        if (options.asynchronous) {
          completions.track({
            id: row.id,
            organization_id: row.organization_id,
            agent_id: row.agent_id,
            agent_version: row.agent_version,
            status: row.status,
            result: row.result,
            error_code: row.error_code,
            source: row.source,
            schedule_id: row.schedule_id,
            user_id: row.user_id,
            user_email: row.user_email,
            created_at: row.created_at,
            finished_at: row.finished_at
          })
        }
      }
      // the task row is committed: from here on the task runs even if this delivery fails (the owner's
      // sweep finds it), so delivery problems never fail the request. A replay (the task an Idempotency-Key
      // made before, perhaps on another node) goes where its own shard is: a run of it here would claim it
      // from its owner's run, cutting short a tool call that run was making
      const runsHere = row.inserted ? here : runs.shardIsHere(row.id)
      if (options.asynchronous) {
        // starting a local run only forks it; a delivery to another node is bounded
        yield* runsHere ? runs.start(row.id) : startRun(client, row.id, DELIVERY_TIMEOUT)
        // accepted: a task inserted started is, to its invoker, accepted and not begun (its run begins now)
        return { task: toTask(row.inserted && here ? { ...row, status: "pending" } : row), accepted: true }
      }
      const outcome = yield* (runsHere ? runs.run(row.id) : client(row.id).Run({ task_id: row.id })).pipe(
        Effect.map((o) => toTask({ ...row, ...o })),
        // the run's node went away mid-run (or the shard is moving): wait for the task to end wherever it resumes
        Effect.catchAllCause(() => awaitEnd(row.organization_id, row.id, config.taskTimeout))
      )
      return { task: outcome, accepted: false }
    })

    /**
     * The task once it ended, or as it is when `timeout` passes: as this node knows it (`known`) or read,
     * then (unless it ended) woken by its end, with the outcome when this node ended it, else read again.
     */
    const whenEnded = <E>(
      id: TaskId,
      read: Effect.Effect<TaskSummary, E>,
      timeout: Duration.DurationInput,
      known?: () => TaskSummary | undefined
    ) =>
      completions.watch(id, (watch) =>
        Effect.gen(function*() {
          const deadline = Date.now() + Duration.toMillis(timeout)
          // known after the watch began: an end from now on wakes it; one before is in what is known
          let row = known?.() ?? (yield* read)
          while (!TERMINAL.has(row.status) && Date.now() < deadline) {
            const ended = yield* watch.next(Math.min(deadline - Date.now(), RECHECK_MS))
            if (ended !== undefined) return toTask({ ...row, ...ended })
            row = yield* read
          }
          return toTask(row)
        }))

    const awaitEnd = (organizationId: OrganizationId, id: TaskId, timeout: Duration.DurationInput) =>
      whenEnded(
        id,
        Effect.flatMap(watched(organizationId, id), (row) =>
          row === undefined ? Effect.dieMessage(`task ${id} vanished`) : Effect.succeed(row)),
        timeout
      )

    /**
     * The task, for a long poll on a node that does not run it: read with this node's wake-up channel
     * registered, so that whoever ends it notifies this node (TaskRepo.watch). Read again at once when the
     * task ended as it was registered. Undefined: no such task in the organization.
     */
    const watched = (organizationId: OrganizationId, id: TaskId) =>
      Effect.flatMap(
        repo.watch(organizationId, id, completions.channel),
        (row) =>
          row !== undefined && !row.watched && !TERMINAL.has(row.status)
            ? repo.watch(organizationId, id, completions.channel)
            : Effect.succeed(row)
      )

    /** The task as `watched` reads it, if the principal may see it. */
    const findWatched = (principal: Principal, id: TaskId) =>
      authorized(principal, id, watched(principal.organizationId, id))

    /** The task as this node knows it (it runs here), if the principal may see it. */
    const knownTo = (principal: Principal, id: TaskId) => {
      const task = completions.known(id)
      return task !== undefined && task.organization_id === principal.organizationId && mayUse(principal, task.agent_id)
        ? task
        : undefined
    }

    /**
     * With `waitSeconds`, a long poll: it answers as soon as the task ends, on whichever node it ran. A task
     * that ended on this node is answered from what the node knows (an end is final); one still running
     * here is only a long poll's starting point (its status may be behind), and a poll that times out
     * reads it. A task on another node's shard is waited for by its owner. `read`: read it first all the
     * same (the fast path's wait on what it knows ran out).
     */
    const get = (principal: Principal, id: TaskId, waitSeconds = 0, read = false) => {
      if (waitSeconds > 0) {
        const known = read ? undefined : knownTo(principal, id)
        return whenEnded(
          id,
          // a task run elsewhere: its end is announced to this node once registered with it
          known === undefined && !placement.isLocal(id) ? findWatched(principal, id) : find(principal, id),
          Duration.seconds(waitSeconds),
          known === undefined ? undefined : () => knownTo(principal, id)
        )
      }
      const task = knownTo(principal, id)
      return task !== undefined && TERMINAL.has(task.status)
        ? Effect.succeed(toTask(task))
        : Effect.map(find(principal, id), toTask)
    }

    /**
     * A read or long poll of a task this node runs, for the fast path, with no fiber and no read: `done`
     * gets the task once it ended here (at once if it had), or nothing when it ended on another node, or
     * did not end within `waitMs` or RECHECK_MS, whichever is shorter (ask `get` then, with the wait left:
     * should its end ever go unannounced, the poll reads it, as `whenEnded` does). False when this node
     * does not know the task (ask `get`); else the result cancels the wait.
     */
    const watchKnown = (
      principal: Principal,
      id: TaskId,
      waitMs: number,
      done: (task: TaskFields | undefined) => void
    ): false | (() => void) => {
      const task = knownTo(principal, id)
      if (task === undefined) return false
      if (TERMINAL.has(task.status) || waitMs <= 0) {
        done(TERMINAL.has(task.status) ? fieldsOf(task) : undefined)
        return constVoid
      }
      // an end from now on wakes it (the lookup and this are one synchronous step: none can come between)
      return completions.onEnd(
        id,
        Math.min(waitMs, RECHECK_MS),
        (ended) => done(ended === undefined ? undefined : fieldsOf({ ...task, ...ended }))
      )
    }

    const list = Effect.fn("Tasks.list")(function*(principal: Principal, f: {
      readonly agent_id?: string | undefined
      readonly status?: string | undefined
      readonly user_id?: string | undefined
      readonly schedule_id?: string | undefined
      readonly created_after?: Date | undefined
      readonly created_before?: Date | undefined
      readonly limit?: number | undefined
      readonly cursor?: string | undefined
    }) {
      const after = yield* positionOf(f.cursor)
      yield* rangeForwards(f.created_after, f.created_before, ["created_after", "created_before"])
      // an agent it cannot see is 404, as for usage and events: an empty list would read as "no tasks yet"
      if (f.agent_id !== undefined) yield* requireFilterAgent(agentRepo, principal, f.agent_id as AgentId)
      const limit = f.limit ?? 50
      const rows = yield* repo.list(principal.organizationId, {
        agentIds: principal.agentIds,
        agentId: f.agent_id,
        status: f.status,
        userId: f.user_id,
        scheduleId: f.schedule_id,
        createdAfter: f.created_after,
        createdBefore: f.created_before,
        after,
        limit: limit + 1
      })
      return pageOf(rows, limit, (row) => row.created_at, toTask)
    })

    const cancel = Effect.fn("Tasks.cancel")(function*(principal: Principal, id: TaskId) {
      yield* find(principal, id)
      // a Member stops their own runs only; stopping someone else's is a Builder's call
      if (
        !holds(principal.role, Policy.cancelOthersTasks) &&
        !(yield* repo.invokedBy(principal.organizationId, id, principal.keyId, principal.userId))
      ) {
        return yield* Forbidden.of(
          "A Member may cancel only the tasks they invoked; ask a Builder or an Admin to cancel this one."
        )
      }
      const cancelled = yield* stop(principal.organizationId, id, "Cancelled on request.")
      const now = (yield* repo.findById(id))!
      if (cancelled === undefined) {
        // a 200 would read as "cancelled" to a client that checks the status code only
        return yield* Conflict.of(
          `This task ended already (${now.status}): there is nothing to cancel.`,
          "task_ended"
        )
      }
      return toTask(now)
    })

    /**
     * Ends a task not ended yet as cancelled, with `message`: its waiters told, its run stopped wherever it
     * runs, its approval requests withdrawn; undefined when it had ended. Uninterruptible, as TaskRunner's
     * finish: a caller gone (a closed connection) between the commit and the rest would leave the end
     * unannounced and the run going.
     */
    const stop = (organizationId: OrganizationId, id: TaskId, message: string) =>
      Effect.uninterruptible(Effect.gen(function*() {
        const cancelled = yield* repo.cancel(organizationId, id, message)
        if (cancelled === undefined) return undefined
        completions.ended(id, outcomeOf(cancelled), cancelled.waiters)
        const interrupted = yield* client(id).Cancel().pipe(Effect.catchAllCause(() => Effect.succeed(false)))
        if (!interrupted) yield* repo.appendEvent(id, "cancelled", "cancelled", { message })
        return cancelled
      }))

    /** Cancels what a deleted agent left running or waiting (by whoever deleted it, a Builder at least). */
    const cancelOfAgent = (organizationId: OrganizationId, agentId: AgentId) =>
      Effect.flatMap(
        repo.unfinishedOfAgent(organizationId, agentId),
        (ids) =>
          Effect.forEach(ids, (id) => stop(organizationId, id, "Cancelled: its agent was deleted."), {
            concurrency: 8,
            discard: true
          })
      )

    /**
     * The thread: the user's message, what the run recorded (model and tool calls, approvals, a cancel), and
     * the answer or the error. The first and the last are the task row's (its input, its result): they are
     * not written twice. Tasks of earlier releases have them recorded too, and show those. The task is read
     * first: events recorded since are newer than its status, so the thread is never missing a step.
     */
    const thread = Effect.fn("Tasks.thread")(function*(principal: Principal, id: TaskId) {
      const row = yield* authorized(principal, id, repo.findWithInput(principal.organizationId, id))
      const recorded = yield* repo.events(id)
      const events: Array<{ readonly type: ThreadEvent["type"]; readonly at: Date; readonly data: unknown }> = []
      if (!recorded.some((e) => e.type === "user_message")) {
        events.push({ type: "user_message", at: row.created_at, data: { text: row.input } })
      }
      for (const e of recorded) {
        const { content: _, user: __, ...data } = e.data ?? {}
        events.push({ type: e.type as ThreadEvent["type"], at: e.at, data })
      }
      const ended = row.status === "completed" || row.status === "error"
      if (ended && !recorded.some((e) => e.type === "agent_message" || e.type === "error")) {
        // every end sets finished_at; a row ended by hand without it still reads
        const at = row.finished_at ?? recorded.at(-1)?.at ?? row.created_at
        events.push(
          row.status === "completed"
            ? { type: "agent_message", at, data: { text: row.result ?? "", ...truncation(recorded) } }
            : {
              type: "error",
              at,
              data: { message: row.result, ...(row.error_code === null ? {} : { code: row.error_code }) }
            }
        )
      }
      const who = { id: row.user_id, email: row.user_email }
      return {
        task_id: id,
        events: events.map((e, i) => new ThreadEvent({ seq: i + 1, type: e.type, at: e.at, user: who, data: e.data }))
      }
    })

    const usage = Effect.fn("Tasks.usage")(function*(principal: Principal, id: TaskId) {
      yield* find(principal, id)
      const rows = yield* repo.usage(id)
      const calls = rows.map((r) => ({
        seq: r.seq,
        at: r.at,
        provider: r.provider,
        model: r.model,
        input_tokens: r.input_tokens,
        output_tokens: r.output_tokens,
        cached_tokens: r.cached_tokens,
        cost_usd: Number(r.cost_usd)
      }))
      const sum = (k: "input_tokens" | "output_tokens" | "cached_tokens" | "cost_usd") =>
        calls.reduce((a, c) => a + c[k], 0)
      return {
        task_id: id,
        calls,
        totals: {
          calls: calls.length,
          input_tokens: sum("input_tokens"),
          output_tokens: sum("output_tokens"),
          cached_tokens: sum("cached_tokens"),
          cost_usd: roundUsd(sum("cost_usd"))
        }
      }
    })

    return { invoke, get, watchKnown, list, cancel, cancelOfAgent, thread, usage } as const
  })
}) {}
