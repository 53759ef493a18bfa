import * as Sse from "@effect/experimental/Sse"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "@effect/platform"
import { Effect, Fiber, Option, Schema, Stream } from "effect"
import type { InvokeAgent, TaskErrorCode } from "../../schema/Agents.js"
import { taskIdOfLocation } from "../../schema/AgentsApi.js"
import { ErrorBody } from "../../schema/Errors.js"
import { taskEndTypes } from "../../schema/Events.js"
import { OUTPUT_DELTA } from "../../schema/InvokeStream.js"
import { type ApiTarget, keyedHttpClient } from "./ApiTarget.js"
import { CliFailure, fromClientError, notUnderstood } from "./CliFailure.js"

/**
 * How a streamed invoke ended: the task's end event (docs/guides/events.md, "Streamed invoke"), or its pause for a
 * person's approval, which a synchronous invoke answers with too (the stream would stay open until the decision).
 */
export interface StreamedEnd {
  readonly taskId: string | undefined
  readonly status: "completed" | "error" | "cancelled" | "waiting_approval" | undefined
  readonly result: string | null
  readonly resultTruncated: boolean
  /** Why it failed (task.error's `error_code`). */
  readonly errorCode: TaskErrorCode | null
  /** Some text came as `task.output.delta` (and was handed to `onText`). */
  readonly streamedText: boolean
}

const decodeError = Schema.decodeUnknownOption(ErrorBody)

const parse = (data: string): any => {
  try {
    return JSON.parse(data)
  } catch {
    return undefined
  }
}

export interface StreamHooks {
  /** The model's text, piece by piece. */
  readonly onText: (text: string) => void
  /** The task is known (from the answer's `Location`, before any event): what an interrupt must cancel. */
  readonly onTask: (taskId: string) => void
  /** Interrupted before the node answered: the request is kept until its answer names the task. */
  readonly onInterruptedBeforeAnswer: () => void
  /** …and the node did not answer in time (or the request failed): a task it started is not known. */
  readonly onNoAnswer: () => void
}

/** How long an interrupted invoke still waits for the node's answer, to learn which task to cancel. */
const ANSWER_AFTER_INTERRUPT = "5 seconds"

/** The task a streamed invoke's answer names (`Location: /v1/tasks/{id}`, sent with the headers). */
const taskOf = (response: HttpClientResponse.HttpClientResponse) =>
  response.status === 200 ? taskIdOfLocation(response.headers["location"]) : undefined

/**
 * `POST /v1/agents/{id}/invoke` with `Accept: text/event-stream`: outside the typed client (HttpApiClient reads
 * one JSON answer), over the same keyed HTTP client. The model's text is handed to `onText` piece by piece as it
 * comes; refusals are the usual JSON envelope before any stream. The task is known from the answer's headers.
 */
export const streamInvoke = (
  target: ApiTarget,
  agentId: string,
  body: typeof InvokeAgent.Encoded,
  idempotencyKey: Option.Option<string>,
  hooks: StreamHooks
) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const request = HttpClientRequest.post(`${target.url}/v1/agents/${encodeURIComponent(agentId)}/invoke`).pipe(
      HttpClientRequest.setHeader("accept", "text/event-stream"),
      Option.match(idempotencyKey, {
        onNone: () => (r: HttpClientRequest.HttpClientRequest) => r,
        onSome: (key) => HttpClientRequest.setHeader("idempotency-key", key)
      }),
      HttpClientRequest.bodyUnsafeJson(body)
    )
    // once sent, the node may have started the task: an interrupt (Ctrl-C) does not drop the request, whose
    // answer names the task to cancel, but waits for that answer a little
    const inFlight = yield* Effect.forkDaemon(client.execute(request))
    const response = yield* Fiber.join(inFlight).pipe(
      Effect.onInterrupt(() =>
        Effect.sync(hooks.onInterruptedBeforeAnswer).pipe(
          // (a finalizer runs uninterruptibly: the wait must be interruptible for its timeout to end it)
          Effect.zipRight(Effect.interruptible(Fiber.join(inFlight)).pipe(Effect.timeout(ANSWER_AFTER_INTERRUPT))),
          Effect.tap((answered) =>
            Effect.sync(() => {
              const taskId = taskOf(answered)
              if (taskId !== undefined) hooks.onTask(taskId)
            })
          ),
          Effect.catchAll(() => Effect.sync(hooks.onNoAnswer)),
          Effect.ensuring(Fiber.interrupt(inFlight))
        )
      )
    )
    if (response.status !== 200 || !(response.headers["content-type"] ?? "").includes("text/event-stream")) {
      const json = yield* Effect.option(response.json)
      return yield* Option.match(Option.flatMap(json, decodeError), {
        onSome: (e) => Effect.fail(CliFailure.api(e.error)),
        onNone: () => Effect.fail(notUnderstood(target.url, response.status))
      })
    }
    const located = taskOf(response)
    if (located !== undefined) hooks.onTask(located)
    let end: StreamedEnd = {
      taskId: located,
      status: undefined,
      result: null,
      resultTruncated: false,
      errorCode: null,
      streamedText: false
    }
    const events: Array<Sse.Event> = []
    const parser = Sse.makeParser((e) => {
      if (e._tag === "Event") events.push(e)
    })
    const handle = (event: Sse.Event) => {
      const data = parse(event.data)
      if (event.event === OUTPUT_DELTA && typeof data?.data?.text === "string") {
        end = { ...end, streamedText: true }
        hooks.onText(data.data.text)
      } else if (event.event === "task.created") {
        end = { ...end, taskId: data?.data?.task_id ?? end.taskId }
        if (typeof end.taskId === "string") hooks.onTask(end.taskId)
      } else if (taskEndTypes.has(event.event) || event.event === "task.waiting_approval") {
        end = {
          ...end,
          taskId: data?.data?.task_id ?? end.taskId,
          status: data?.data?.status,
          result: data?.data?.result ?? null,
          resultTruncated: data?.data?.result_truncated === true,
          errorCode: data?.data?.error_code ?? null
        }
      }
    }
    yield* response.stream.pipe(
      Stream.decodeText(),
      // read until the task ends or waits for approval (its event sets `status`)
      Stream.runForEachWhile((chunk) =>
        Effect.sync(() => {
          parser.feed(chunk)
          for (const event of events.splice(0)) if (end.status === undefined) handle(event)
          return end.status === undefined
        })
      )
    )
    return end
  }).pipe(
    Effect.provide(keyedHttpClient(target.key)),
    Effect.catchAll(fromClientError(target.url))
  )
