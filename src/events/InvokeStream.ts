import { Effect, Queue, Stream } from "effect"
import type { InvokeAgent } from "../../schema/Agents.js"
import { taskLocation } from "../../schema/AgentsApi.js"
import type { AgentId, OrganizationId, TaskId } from "../../schema/Ids.js"
import { OUTPUT_DELTA, type TaskOutputDelta } from "../../schema/InvokeStream.js"
import type { Principal } from "../../schema/Security.js"
import { Drain } from "../http/Drain.js"
import { Tasks } from "../tasks/Tasks.js"
import { EventLog } from "./EventLog.js"
import { EventRepo } from "./EventRepo.js"
import { eventStreamResponse, sseEvent, sseFailure, taskEvents } from "./EventStreamResponse.js"
import { type OutputDelta, TaskOutput } from "./TaskOutput.js"

/** A delta's frame: no `id:` line, as it is not in the log (a reconnect resumes after the last logged event). */
const deltaFrame = (taskId: string, agentId: string, delta: OutputDelta) => {
  const data: TaskOutputDelta = {
    type: OUTPUT_DELTA,
    data: { task_id: taskId as TaskId, agent_id: agentId as AgentId, step: delta.step, text: delta.text }
  }
  return `event: ${OUTPUT_DELTA}\ndata: ${JSON.stringify(data)}\n\n`
}

/** The events a step writes: its model call, and each of its tool calls. */
const isStepEvent = (type: string) => type === "task.model_call" || type === "task.tool_call"

/**
 * A streamed invoke's ear on its task's output (TaskOutput), from before the task can run. Deltas wait, in the
 * order heard, until the stream has sent the task's first event (`task.created`, so a client learns the task's
 * id first) and the step events written before their step (`after`): the log's events reach the stream a
 * moment after their commit, and a step's text must not overtake the tool calls of the step before it.
 */
class Hearing {
  taskId: string | undefined
  private stop: (() => void) | undefined
  private held: Array<OutputDelta> = []
  private stepEventsSent = 0
  private deliver: ((frame: string) => void) | undefined

  constructor(readonly output: TaskOutput, readonly agentId: string) {}

  listen(taskId: string) {
    this.stop?.()
    this.taskId = taskId
    this.held = []
    this.stop = this.output.listen(taskId, (delta) => {
      this.held.push(delta)
      this.flush()
    })
  }

  open(deliver: (frame: string) => void) {
    this.deliver = deliver
    this.flush()
  }

  /** The stream sent one of the task's step events. */
  stepEventSent() {
    this.stepEventsSent++
    this.flush()
  }

  private flush() {
    const deliver = this.deliver
    if (deliver === undefined) return
    let ready = 0
    while (ready < this.held.length && this.held[ready]!.after <= this.stepEventsSent) {
      deliver(deltaFrame(this.taskId!, this.agentId, this.held[ready]!))
      ready++
    }
    if (ready > 0) this.held.splice(0, ready)
  }

  close() {
    this.stop?.()
    this.stop = undefined
    this.deliver = undefined
    this.held = []
  }
}

/**
 * `POST /v1/agents/{id}/invoke` with `Accept: text/event-stream` (docs/guides/events.md, "Streamed invoke"): the
 * task is invoked as an asynchronous invoke would, and the response streams its events as
 * `GET /v1/tasks/{id}/events` does (the same writer and framing), with the model's text as `task.output.delta`
 * events between them, until the task's end. The deltas come from this node's memory (TaskOutput): the task runs
 * here (TaskPlacement); should its run move to another node, the deltas stop and its events go on.
 */
export class InvokeStream extends Effect.Service<InvokeStream>()("events/InvokeStream", {
  effect: Effect.gen(function*() {
    const log = yield* EventLog
    const repo = yield* EventRepo
    const output = yield* TaskOutput
    const tasks = yield* Tasks
    const drain = yield* Drain

    /** Invokes, then answers with the stream; a refused invoke (404, 402, 409 …) fails before any byte is sent. */
    const invoke = (principal: Principal, agentId: AgentId, body: InvokeAgent, idempotencyKey: string | undefined) =>
      Effect.gen(function*() {
        const hearing = new Hearing(output, agentId)
        const { task } = yield* tasks.invoke(principal, agentId, body, {
          asynchronous: true,
          idempotencyKey,
          source: "api",
          created: (id) => hearing.listen(id)
        }).pipe(Effect.onError(() => Effect.sync(() => hearing.close())))
        // an Idempotency-Key seen before: its task, not the one this request would have made
        if (hearing.taskId !== task.id) hearing.listen(task.id)
        const stored = yield* repo.task(principal.organizationId, task.id).pipe(
          Effect.onError(() => Effect.sync(() => hearing.close()))
        )
        const events = taskEvents(
          log,
          principal.organizationId,
          task.id,
          0n,
          stored ?? { status: task.status, has_end: false }
        )
        const frames = Stream.unwrapScoped(Effect.gen(function*() {
          yield* Effect.addFinalizer(() => Effect.sync(() => hearing.close()))
          const queue = yield* Effect.acquireRelease(Queue.unbounded<string | null>(), Queue.shutdown)
          // one queue in arrival order: a call's deltas are heard before its task.model_call is committed, so
          // they come before it, and all of them before the task's end. Each event is its own frame: when the
          // task ran before the first read, that read holds all its events, and the deltas held for
          // task.created (or for a step event) must follow it, not the task's end
          let opened = false
          yield* events.pipe(
            Stream.map((e) => [sseEvent(e), isStepEvent(e.type)] as const),
            Stream.catchAll((e) => Stream.make([sseFailure(e), false] as const)),
            Stream.runForEach(([frame, stepEvent]) =>
              Effect.sync(() => {
                queue.unsafeOffer(frame)
                if (!opened) {
                  opened = true
                  hearing.open((delta) => void queue.unsafeOffer(delta))
                }
                if (stepEvent) hearing.stepEventSent()
              })
            ),
            Effect.ensuring(Effect.sync(() => {
              hearing.close()
              queue.unsafeOffer(null)
            })),
            Effect.forkScoped
          )
          return Stream.fromQueue(queue).pipe(Stream.takeWhile((frame): frame is string => frame !== null))
        }))
        return eventStreamResponse(drain, frames, { location: taskLocation(task.id) })
      })

    /**
     * A task's events from its first, ending after its end (what `GET /v1/tasks/{id}/events` sends): MCP's
     * `invoke_agent` reports progress per event. The caller has checked that the principal may read the task.
     */
    const events = (organizationId: OrganizationId, taskId: TaskId) =>
      Stream.unwrap(Effect.map(
        repo.task(organizationId, taskId),
        (stored) => taskEvents(log, organizationId, taskId, 0n, stored ?? { status: "pending", has_end: false })
      ))

    return { invoke, events } as const
  }),
  dependencies: [EventLog.Default, EventRepo.Default, TaskOutput.Default]
}) {}
