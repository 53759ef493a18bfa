import { agentId, at, created, digestTaskId, list, ok, type OperationExample, page, scheduleId, user } from "./Story.js"

const webhookId = "452294ba-e29b-439c-b8f4-6e5f4eace570"

const digestInput = { text: "Summarize yesterday's open tickets.", user }
/** Weekdays at 08:00 in Berlin (UTC+1 in January). */
const nextRuns = (...days: ReadonlyArray<number>) =>
  days.map((day) => ({ utc: `2026-01-${day}T07:00:00.000Z`, local: `2026-01-${day}T08:00:00.000+01:00` }))
const schedule = (next_runs: ReadonlyArray<unknown>, last_run: unknown) => ({
  id: scheduleId,
  name: "Morning digest",
  agent_id: agentId,
  cron: "0 8 * * 1-5",
  every: null,
  timezone: "Europe/Berlin",
  input: digestInput,
  enabled: true,
  start_at: null,
  end_at: null,
  jitter: null,
  overlap: "skip",
  catchup_window: "1h",
  next_runs,
  last_run,
  created_at: at(14, "16:00:00"),
  updated_at: at(14, "16:00:00")
})

const webhook = {
  id: webhookId,
  url: "https://hooks.example.com/switchyard",
  description: "",
  event_types: ["task.completed", "task.error"],
  enabled: true,
  disabled_reason: null,
  previous_secret_expires_at: null,
  created_at: at(14, "11:00:00"),
  updated_at: at(14, "11:00:00")
}
const attempt = (time: string, status_code: number, latency_ms: number, response_excerpt: string) => ({
  attempt: 1,
  at: at(15, time),
  status_code,
  latency_ms,
  response_excerpt,
  error: null
})

export const scheduleAndWebhookExamples: Record<string, OperationExample> = {
  createSchedule: {
    request: {
      agent_id: agentId,
      name: "Morning digest",
      cron: "0 8 * * 1-5",
      timezone: "Europe/Berlin",
      input: digestInput
    },
    response: created(schedule(nextRuns(15, 16, 19, 20, 21), null))
  },
  listSchedules: {
    response: ok(list(schedule(nextRuns(16, 19, 20, 21, 22), {
      scheduled_for: at(15, "07:00:00"),
      kind: "scheduled",
      status: "fired",
      task_id: digestTaskId,
      reason: null
    })))
  },
  createWebhook: {
    request: { url: webhook.url, event_types: webhook.event_types },
    response: created({ ...webhook, secret: "whsec_MjSEPLEHMfV3MbIWm0R/n3pFS3eJkT7iYIk3C9Xy8GQ=" })
  },
  listWebhooks: { response: ok(list(webhook)) },
  listWebhookDeliveries: {
    response: ok(page(
      {
        id: "msg_489b19fa7d6ff7b37400332bf03c5e3d",
        event_id: "1042",
        event_type: "task.completed",
        status: "pending",
        next_attempt_at: at(15, "09:30:10"),
        attempts: [attempt("09:30:05", 503, 31, "Service Unavailable")],
        created_at: at(15, "09:30:04"),
        delivered_at: null
      },
      {
        id: "msg_07890c46ffcfe96e0124ebfb4fcac009",
        event_id: "1017",
        event_type: "task.completed",
        status: "succeeded",
        next_attempt_at: null,
        attempts: [attempt("07:00:10", 204, 84, "")],
        created_at: at(15, "07:00:09"),
        delivered_at: at(15, "07:00:10")
      }
    ))
  }
}
