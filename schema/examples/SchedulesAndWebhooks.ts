import {
  accepted,
  agentId,
  allOf,
  at,
  created,
  digestTaskId,
  ok,
  type OperationExample,
  page,
  scheduleId,
  user
} from "./Story.js"

const webhookId = "452294ba-e29b-439c-b8f4-6e5f4eace570"

const digestInput = { text: "Summarize yesterday's open tickets.", user }
/** Weekdays at 08:00 in Berlin (UTC+1 in January). */
const nextRuns = (...days: ReadonlyArray<number>) =>
  days.map((day) => ({ utc: `2026-01-${day}T07:00:00.000Z`, local: `2026-01-${day}T08:00:00.000+01:00` }))
const schedule = (next_runs: ReadonlyArray<unknown>, last_run: unknown, updated_at = at(14, "16:00:00")) => ({
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
  updated_at
})
const firedThisMorning = {
  scheduled_for: at(15, "07:00:00"),
  kind: "scheduled",
  status: "fired",
  task_id: digestTaskId,
  reason: null
}
const digestSchedule = schedule(nextRuns(16, 19, 20, 21, 22), firedThisMorning)
/** Runs spread over 5 minutes, and one kept waiting while the previous one is still going. */
const spreadSchedule = { ...digestSchedule, jitter: "5m", overlap: "buffer_one", updated_at: at(15, "10:00:00") }
/** Run now, by hand (`triggerSchedule`). */
const manualTaskId = "9d7b5f3a-1c2e-4a8b-b6d4-2f0e8c6a4b19"
const triggered = {
  scheduled_for: at(15, "11:30:00"),
  kind: "manual",
  status: "fired",
  task_id: manualTaskId,
  reason: null
}

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
const onCall = {
  ...webhook,
  description: "Support on-call",
  event_types: [...webhook.event_types, "approval.requested"],
  updated_at: at(15, "10:45:00")
}
/** Attempts come newest first; an answer without a body has no excerpt (null). */
const attempt = (
  n: number,
  time: string,
  status_code: number,
  latency_ms: number,
  response_excerpt: string | null
) => ({
  attempt: n,
  at: at(15, time),
  status_code,
  latency_ms,
  response_excerpt,
  error: null
})

const firstAttempt = attempt(1, "09:30:05", 503, 31, "Service Unavailable")
/** The delivery of the `task.completed` of Ada's question, its first attempt refused. */
const pendingDelivery = {
  id: "msg_489b19fa7d6ff7b37400332bf03c5e3d",
  event_id: "1042",
  event_type: "task.completed",
  status: "pending",
  next_attempt_at: at(15, "09:30:10"),
  attempts: [firstAttempt],
  created_at: at(15, "09:30:04"),
  delivered_at: null
}

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
  listSchedules: { response: ok(allOf(digestSchedule)) },
  getSchedule: { response: ok(digestSchedule) },
  updateSchedule: { request: { jitter: "5m", overlap: "buffer_one" }, response: ok(spreadSchedule) },
  triggerSchedule: {
    response: accepted({
      id: manualTaskId,
      agent_id: agentId,
      agent_version: 2,
      status: "pending",
      result: null,
      error_code: null,
      source: "schedule",
      schedule_id: scheduleId,
      user,
      created_at: at(15, "11:30:00"),
      finished_at: null
    })
  },
  // paused, a schedule has no next runs
  pauseSchedule: {
    response: ok({
      ...spreadSchedule,
      enabled: false,
      next_runs: [],
      last_run: triggered,
      updated_at: at(15, "17:00:00")
    })
  },
  resumeSchedule: {
    response: ok({
      ...spreadSchedule,
      next_runs: nextRuns(19, 20, 21, 22, 23),
      last_run: triggered,
      updated_at: at(16, "09:00:00")
    })
  },
  createWebhook: {
    request: { url: webhook.url, event_types: webhook.event_types },
    response: created({ ...webhook, secret: "whsec_MjSEPLEHMfV3MbIWm0R/n3pFS3eJkT7iYIk3C9Xy8GQ=" })
  },
  listWebhooks: { response: ok(allOf(webhook)) },
  getWebhook: { response: ok(webhook) },
  updateWebhook: {
    request: { event_types: onCall.event_types, description: onCall.description },
    response: ok(onCall)
  },
  rotateWebhookSecret: {
    // the previous secret signs beside the new one for 24 hours
    response: ok({
      ...onCall,
      previous_secret_expires_at: at(16, "11:00:00"),
      updated_at: at(15, "11:00:00"),
      secret: "whsec_9Qv3yTfK2mLp8XcR5nWb7HjD1sGa4EuZ6oIi0YkMq3A="
    })
  },
  retryWebhookDelivery: {
    response: ok({
      ...pendingDelivery,
      status: "succeeded",
      next_attempt_at: null,
      attempts: [attempt(2, "09:30:08", 204, 47, null), firstAttempt],
      delivered_at: at(15, "09:30:08")
    })
  },
  pingWebhook: {
    // a ping's id is a time-ordered UUID's hex; it delivers no event of the log
    response: ok({
      id: "msg_019bc126bca07c3a9f1e2b4d6a8c0e15",
      event_id: null,
      event_type: "webhook.ping",
      status: "succeeded",
      next_attempt_at: null,
      attempts: [attempt(1, "10:15:00", 204, 52, null)],
      created_at: at(15, "10:15:00"),
      delivered_at: at(15, "10:15:00")
    })
  },
  listWebhookDeliveries: {
    response: ok(page(
      pendingDelivery,
      {
        id: "msg_07890c46ffcfe96e0124ebfb4fcac009",
        event_id: "1017",
        event_type: "task.completed",
        status: "succeeded",
        next_attempt_at: null,
        attempts: [attempt(1, "07:00:10", 204, 84, null)],
        created_at: at(15, "07:00:09"),
        delivered_at: at(15, "07:00:10")
      }
    ))
  }
}
