import {
  agentId,
  allOf,
  at,
  connectionId,
  created,
  digestTaskId,
  now,
  ok,
  type OperationExample,
  page,
  refundTaskId,
  scheduleId,
  user
} from "./Story.js"

const taskId = "5f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"
const model = { provider: "openai", name: "gpt-4.1-mini" }

export const agent = {
  id: agentId,
  name: "Support triage",
  instructions: "Answer from the order system; never promise refunds.",
  model,
  skills: [{ connection_id: connectionId, operation_ids: ["getOrder"] }],
  budget: { limit_usd: 50, period: "month" },
  spent_usd: 0,
  max_steps: 10,
  max_tokens: null,
  timeout_seconds: null,
  version: 1,
  created_at: at(12, "09:00:00"),
  updated_at: at(12, "09:00:00")
}
export const updatedAgent = { ...agent, max_steps: 15, spent_usd: 1.84, version: 2, updated_at: at(15, "09:45:00") }

const task = (status: string, result: string | null, finished: string | null, id = taskId, created = now) => ({
  id,
  agent_id: agentId,
  agent_version: 1,
  status,
  result,
  error_code: null,
  source: "api",
  user,
  created_at: created,
  finished_at: finished
})
const orderAnswer = "Order 1234 shipped on January 14."
const digestTask = {
  ...task("completed", "3 tickets are open; the oldest waits since Monday.", at(15, "07:00:09"), digestTaskId),
  source: "schedule",
  schedule_id: scheduleId,
  created_at: at(15, "07:00:00")
}
/**
 * One model call of a run, priced as gpt-4.1-mini is (USD per million tokens: 0.40 input, 0.10 cached input, 1.60
 * output), to the 8 decimals the usage is stored with.
 */
const modelCall = (seq: number, time: string, tokens: Record<string, number>, cost_usd: number) => ({
  seq,
  at: at(15, time),
  provider: model.provider,
  model: model.name,
  ...tokens,
  cost_usd
})

const refundTask = task("waiting_approval", null, null, refundTaskId, at(15, "09:12:00"))

export const agentAndTaskExamples: Record<string, OperationExample> = {
  createAgent: {
    request: {
      name: agent.name,
      instructions: agent.instructions,
      model,
      skills: agent.skills,
      budget: agent.budget
    },
    response: created(agent)
  },
  listAgents: { response: ok(allOf(updatedAgent)) },
  getAgent: { response: ok(updatedAgent) },
  updateAgent: { request: { max_steps: 15 }, response: ok(updatedAgent) },
  invokeAgent: {
    request: { input: { text: "Where is order 1234?", user } },
    response: ok(task("completed", orderAnswer, at(15, "09:30:04")))
  },
  listTasks: { response: ok(page(task("completed", orderAnswer, at(15, "09:30:04")), refundTask, digestTask)) },
  getTask: { response: ok(task("executing", null, null)) },
  cancelTask: { response: ok({ ...refundTask, status: "cancelled", finished_at: at(15, "09:31:00") }) },
  getLlmUsage: {
    response: ok({
      task_id: taskId,
      // the call that asked for getOrder, then the one that answered
      calls: [
        modelCall(1, "09:30:02", { input_tokens: 1850, output_tokens: 40, cached_tokens: 0 }, 0.000804),
        modelCall(2, "09:30:04", { input_tokens: 1990, output_tokens: 24, cached_tokens: 1536 }, 0.0003736)
      ],
      totals: { calls: 2, input_tokens: 3840, output_tokens: 64, cached_tokens: 1536, cost_usd: 0.0011776 }
    })
  },
  getThread: {
    response: ok({
      task_id: taskId,
      events: [
        { seq: 1, type: "user_message", at: now, user, data: { text: "Where is order 1234?" } },
        {
          seq: 2,
          type: "tool_call",
          at: at(15, "09:30:02"),
          user,
          data: {
            step: 1,
            name: "getOrder",
            connection_id: connectionId,
            operation_id: "getOrder",
            arguments: { path_params: { id: "1234" } },
            status: 200,
            outcome: "ok",
            result: "{\"id\":\"1234\",\"status\":\"shipped\"}",
            duration_ms: 84
          }
        },
        { seq: 3, type: "agent_message", at: at(15, "09:30:04"), user, data: { text: orderAnswer } }
      ]
    })
  }
}
