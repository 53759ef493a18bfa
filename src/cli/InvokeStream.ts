import * as Sse from "@effect/experimental/Sse"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Option, Schema, Stream } from "effect"
import type { InvokeAgent, TaskErrorCode } from "../../schema/Agents.js"
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

/**
 * `POST /v1/agents/{id}/invoke` with `Accept: text/event-stream`: outside the typed client (HttpApiClient reads
 * one JSON answer), over the same keyed HTTP client. The model's text is handed to `onText` piece by piece as it
 * comes; refusals are the usual JSON envelope before any stream.
 */
export const streamInvoke = (
  target: ApiTarget,
  agentId: string,
  body: typeof InvokeAgent.Encoded,
  onText: (text: string) => void,
  idempotencyKey: Option.Option<string>,
  onTask: (taskId: string) => void = () => undefined
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
    const response = yield* client.execute(request)
    if (response.status !== 200 || !(response.headers["content-type"] ?? "").includes("text/event-stream")) {
      const json = yield* Effect.option(response.json)
      return yield* Option.match(Option.flatMap(json, decodeError), {
        onSome: (e) => Effect.fail(CliFailure.api(e.error)),
        onNone: () => Effect.fail(notUnderstood(target.url, response.status))
      })
    }
    let end: StreamedEnd = {
      taskId: undefined,
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
        onText(data.data.text)
      } else if (event.event === "task.created") {
        end = { ...end, taskId: data?.data?.task_id }
        if (typeof end.taskId === "string") onTask(end.taskId)
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
