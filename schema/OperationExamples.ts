/**
 * Request and response examples of the main operations, by operationId, as the document shows them
 * (`documentApi`). redocly.yaml makes an example that does not fit its schema a lint error, so one that
 * no longer fits the contract fails test/openapi/Lint.test.ts.
 */
export interface OperationExample {
  readonly request?: unknown
  readonly response?: { readonly status: number; readonly value: unknown }
}

const agentId = "0b8a4f0e-6c7d-4f43-9d0a-2f5b1f6f3a10"
const taskId = "5f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"
const connectionId = "2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d"
const user = { id: "customer-42", email: "ada@example.com" }
const model = { provider: "openai", name: "gpt-4.1-mini" }

const task = (status: string, result: string | null, finished: string | null) => ({
  id: taskId,
  agent_id: agentId,
  agent_version: 1,
  status,
  result,
  source: "api",
  user,
  created_at: "2026-01-15T09:30:00.000000Z",
  finished_at: finished
})

const agent = {
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
  created_at: "2026-01-15T09:00:00.000000Z",
  updated_at: "2026-01-15T09:00:00.000000Z"
}

export const operationExamples: Record<string, OperationExample> = {
  createAgent: {
    request: {
      name: agent.name,
      instructions: agent.instructions,
      model,
      skills: agent.skills,
      budget: agent.budget
    },
    response: { status: 201, value: agent }
  },
  invokeAgent: {
    request: { input: { text: "Where is order 1234?", user } },
    response: {
      status: 200,
      value: task("completed", "Order 1234 shipped on January 14.", "2026-01-15T09:30:04.000000Z")
    }
  },
  getTask: { response: { status: 200, value: task("executing", null, null) } },
  getThread: {
    response: {
      status: 200,
      value: {
        task_id: taskId,
        events: [
          {
            seq: 1,
            type: "user_message",
            at: "2026-01-15T09:30:00.000000Z",
            user,
            data: { text: "Where is order 1234?" }
          },
          {
            seq: 2,
            type: "tool_call",
            at: "2026-01-15T09:30:02.000000Z",
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
          {
            seq: 3,
            type: "agent_message",
            at: "2026-01-15T09:30:04.000000Z",
            user,
            data: { text: "Order 1234 shipped on January 14." }
          }
        ]
      }
    }
  },
  createConnector: {
    request: {
      spec: {
        openapi: "3.1.0",
        info: { title: "Orders", version: "2.0" },
        servers: [{ url: "https://orders.example.com/v2" }],
        paths: {
          "/orders/{id}": {
            get: {
              operationId: "getOrder",
              summary: "Get an order",
              parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
              responses: { "200": { description: "The order." } }
            }
          }
        }
      },
      name: "Orders"
    }
  },
  createConnection: {
    request: {
      name: "Orders (production)",
      access_scope: "organizational",
      credentials: { type: "bearer", token: "orders-api-token" }
    }
  },
  invokeOperation: {
    request: { path_params: { id: "1234" }, query_params: { expand: "items" } },
    response: { status: 200, value: { id: "1234", status: "shipped" } }
  },
  createApiKey: {
    request: { name: "CI deploys", kind: "organization", role: "builder" }
  },
  createSchedule: {
    request: {
      agent_id: agentId,
      name: "Morning digest",
      cron: "0 8 * * 1-5",
      timezone: "Europe/Berlin",
      input: { text: "Summarize yesterday's open tickets.", user }
    }
  },
  createWebhook: {
    request: { url: "https://hooks.example.com/switchyard", event_types: ["task.completed", "task.error"] }
  }
}
