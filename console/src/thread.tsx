import { useEffect } from "react"
import { queryClient, type Schemas } from "./api.js"
import { Json, time, usd } from "./ui.js"

type Event = Schemas["ThreadEvent"]

const field = (data: unknown, name: string): unknown =>
  typeof data === "object" && data !== null ? (data as Record<string, unknown>)[name] : undefined

const text = (data: unknown) => {
  const t = field(data, "text") ?? field(data, "message")
  return typeof t === "string" ? t : undefined
}

/** A task's thread as it grows: messages, model calls, tool calls (arguments and result), approvals, errors. */
export const ThreadView = ({ events, usage }: {
  readonly events: ReadonlyArray<Event>
  /** The task's model calls (`/llm_usage`), shown on their thread events when given. */
  readonly usage?: Schemas["LlmUsage"]["calls"]
}) => {
  // the usage records count the task's model calls 1, 2, … in the order of its model_call events
  const modelCalls = events.filter((e) => e.type === "model_call")
  return (
    <ol className="thread" aria-label="Thread">
      {events.map((e) => (
        <li key={`${e.seq}-${e.type}`} className={`event event-${e.type}`}>
          <EventBody event={e} call={e.type === "model_call" ? usage?.[modelCalls.indexOf(e)] : undefined} />
          <div className="event-time muted">{time(e.at)}</div>
        </li>
      ))}
    </ol>
  )
}

const EventBody = ({ call, event: e }: {
  readonly event: Event
  readonly call: Schemas["LlmUsage"]["calls"][number] | undefined
}) => {
  switch (e.type) {
    case "user_message":
      return (
        <div>
          <strong>{e.user.email || "User"}</strong>
          <p className="message">{text(e.data)}</p>
        </div>
      )
    case "agent_message":
      return (
        <div>
          <strong>Agent</strong>
          <p className="message">{text(e.data)}</p>
        </div>
      )
    case "tool_call":
      return (
        <details open>
          <summary>
            Tool call <code>{String(field(e.data, "name"))}</code> — {String(field(e.data, "outcome") ?? "")}
            {field(e.data, "status") !== null && field(e.data, "status") !== undefined &&
              ` (HTTP ${String(field(e.data, "status"))})`}
          </summary>
          <h4>Arguments</h4>
          <Json value={field(e.data, "arguments")} />
          <h4>Result</h4>
          <Json value={field(e.data, "result")} />
        </details>
      )
    case "model_call":
      return (
        <details>
          <summary>
            Model call
            {call !== undefined &&
              ` · ${call.model} · ${call.input_tokens} in, ${call.output_tokens} out · ${usd(call.cost_usd)}`}
          </summary>
          <Json value={e.data} />
        </details>
      )
    case "approval_requested":
      return (
        <div>
          <strong>Approval requested</strong> for <code>{String(field(e.data, "tool") ?? field(e.data, "name"))}</code>
          <Json value={field(e.data, "arguments")} />
        </div>
      )
    case "approval_decided":
      return (
        <div>
          <strong>Approval {String(field(e.data, "status") ?? field(e.data, "decision") ?? "decided")}</strong>
          {text(e.data) !== undefined && <p>{text(e.data)}</p>}
        </div>
      )
    case "error":
      return (
        <div className="error-event">
          <strong>Error</strong>
          <p className="message">{text(e.data) ?? JSON.stringify(e.data)}</p>
        </div>
      )
    case "cancelled":
      return (
        <div>
          <strong>Cancelled</strong> {text(e.data)}
        </div>
      )
  }
}

export const ended = (status: Schemas["Task"]["status"] | undefined) =>
  status === "completed" || status === "error" || status === "cancelled"

const TASK_EVENTS = [
  "task.created",
  "task.started",
  "task.tool_call",
  "task.model_call",
  "task.waiting_approval",
  "task.completed",
  "task.error",
  "task.cancelled",
  "approval.requested",
  "approval.decided"
] as const
const ENDS = new Set(["task.completed", "task.error", "task.cancelled"])

/**
 * Follows a task's event stream (`GET /v1/tasks/{id}/events`; the session cookie goes with it, which is why a
 * plain EventSource works here) and refreshes the task and its thread on every event, until the task ends.
 */
export const useTaskEvents = (taskId: string | undefined, enabled: boolean) => {
  useEffect(() => {
    if (taskId === undefined || !enabled) return
    const source = new EventSource(`/v1/tasks/${encodeURIComponent(taskId)}/events`)
    const refresh = (e: MessageEvent) => {
      queryClient.invalidateQueries({ queryKey: ["thread", taskId] })
      queryClient.invalidateQueries({ queryKey: ["tasks", taskId] })
      if (e.type.startsWith("approval.")) queryClient.invalidateQueries({ queryKey: ["approvals"] })
      // the stream ends after the task's end: no reconnecting to a finished stream
      if (ENDS.has(e.type)) source.close()
    }
    for (const type of TASK_EVENTS) source.addEventListener(type, refresh)
    return () => source.close()
  }, [taskId, enabled])
}
