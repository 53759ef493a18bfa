/**
 * Request and response examples of the main operations, by operationId, as the document shows them
 * (`documentApi`). redocly.yaml makes an example that does not fit its schema a lint error, so one that
 * no longer fits the contract fails test/openapi/Lint.test.ts.
 *
 * They tell one story, so a reader can follow ids from one operation to the next: Ada, an Admin of Acme
 * Retail, imports an Orders API, connects it, gives a support agent a refund skill that asks for approval,
 * schedules a digest, and watches tasks, webhooks, usage and the audit log.
 */
export interface OperationExample {
  readonly request?: unknown
  readonly response?: { readonly status: number; readonly value: unknown }
}

const ok = (value: unknown) => ({ status: 200, value })
const created = (value: unknown) => ({ status: 201, value })
const accepted = (value: unknown) => ({ status: 202, value })
/** A cursor-paged list on its last page, and a counted list. */
const page = (...items: ReadonlyArray<unknown>) => ({ items, next_cursor: null })
const list = (...items: ReadonlyArray<unknown>) => ({ items, total: items.length })

/** A Timestamp in the contract's form (UTC, microseconds), on a day of January 2026. */
const at = (day: number, time: string) => `2026-01-${String(day).padStart(2, "0")}T${time}.000000Z`
const now = at(15, "09:30:00")

const organizationId = "212e83ba-dff7-453b-9d1b-98e88eb9a6d3"
const adaId = "302b67a2-a19b-4c7f-80d9-4cb343c0a4e0"
const graceId = "c32d9726-1652-42a7-8fca-6552cd9b212c"
const personalKeyId = "p8d2r5t1v6xa"
const ciKeyId = "k3x9m2p7q4wz"
const connectorId = "f556e7a1-e8b6-40a7-bae1-81230bda760d"
const connectionId = "2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d"
const agentId = "0b8a4f0e-6c7d-4f43-9d0a-2f5b1f6f3a10"
const taskId = "5f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"
const digestTaskId = "e024319f-65ed-4208-97cc-0591596ff159"
const refundTaskId = "8c4b2a1d-3e5f-4a6b-9c7d-0e1f2a3b4c5d"
const skillId = "01a616e1-f480-48b5-8caf-962b465052db"
const approvalId = "902a51bd-a1eb-467b-970b-881ad3c2cc8b"
const commandApprovalId = "e6c91327-98a1-479a-9053-4ca3172ec384"
const scheduleId = "42ff1b0a-d0af-4b9a-9da1-fd203c8466ef"
const webhookId = "452294ba-e29b-439c-b8f4-6e5f4eace570"
const fileId = "bbddcef2-3bd8-456b-84e0-207b9da07c5f"
const reportFileId = "02a92f30-a311-4882-a3de-ac7dc5fbd914"
const knowledgeBaseId = "e4eaf6cd-f19d-4d1f-bf75-279737340c25"
const documentId = "602079f7-82ab-41f1-8618-bf350a873e8e"
const functionId = "90bffc4e-1fcb-4e47-9e86-28d257ee4fa0"

/** The person a task runs for (`input.user`), by the calling application's own id for them. */
const user = { id: "customer-42", email: "ada@example.com" }
const ada = { id: adaId, email: "ada@example.com", name: "Ada Lovelace" }
const grace = { id: graceId, email: "grace@example.com", name: "Grace Hopper" }
const byAda = { type: "user", id: adaId, key_id: personalKeyId }
const model = { provider: "openai", name: "gpt-4.1-mini" }

const member = (who: typeof ada, role: "admin" | "builder", role_display: string, day: number) => ({
  user: who,
  role,
  role_display,
  created_at: at(day, "08:00:00")
})

interface KeyFields {
  readonly kind: string
  readonly name: string
  readonly role: string
  readonly user_id: string | null
  readonly created_at: string
}
const apiKey = (id: string, fields: KeyFields) => ({
  id,
  ...fields,
  prefix: `sy_${id}_`,
  agent_ids: null,
  last_used_at: now,
  revoked_at: null
})
const personalKey = apiKey(personalKeyId, {
  kind: "personal",
  name: "Ada's laptop",
  role: "admin",
  user_id: adaId,
  created_at: at(10, "08:01:00")
})
const ciKey = apiKey(ciKeyId, {
  kind: "organization",
  name: "CI deploys",
  role: "builder",
  user_id: null,
  created_at: at(10, "08:05:00")
})

const ordersSpec = {
  openapi: "3.1.0",
  info: { title: "Orders", version: "2.0", description: "Orders, shipments and refunds of the web shop." },
  servers: [{ url: "https://orders.example.com/v2" }],
  components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
  security: [{ bearer: [] }],
  paths: {
    "/orders/{id}": {
      get: {
        operationId: "getOrder",
        summary: "Get an order",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        responses: { "200": { description: "The order." } }
      }
    },
    "/orders/{id}/refunds": {
      post: {
        operationId: "createRefund",
        summary: "Refund an order",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        requestBody: {
          content: { "application/json": { schema: { type: "object", properties: { amount: { type: "number" } } } } }
        },
        responses: { "201": { description: "The refund." } }
      }
    }
  }
}

const connection = {
  id: connectionId,
  name: "Orders (production)",
  access_scope: "organizational",
  connector_id: connectorId,
  auth_type: "bearer",
  status: "active",
  owner_user_id: null,
  server_url: null,
  created_at: at(12, "08:45:00"),
  updated_at: at(12, "08:45:00")
}

const connector = (connections: ReadonlyArray<unknown>) => ({
  kind: "connector",
  id: connectorId,
  name: "Orders",
  description: ordersSpec.info.description,
  status: "ready",
  total_operations: 2,
  using_built_in_auth: false,
  built_in: false,
  auth_types: ["bearer"],
  server_url: "https://orders.example.com/v2",
  connections,
  created_at: at(12, "08:40:00"),
  updated_at: at(12, "08:40:00")
})

/** `id` is the operation's method and path, `operationId` the imported document's. */
const operation = (id: string, operationId: string, method: string, path: string, pretty_name: string) => ({
  id,
  operationId,
  path,
  method,
  pretty_name,
  pretty_description: pretty_name
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
  created_at: at(12, "09:00:00"),
  updated_at: at(12, "09:00:00")
}
const updatedAgent = { ...agent, max_steps: 15, spent_usd: 1.84, version: 2, updated_at: at(15, "09:45:00") }

const task = (status: string, result: string | null, finished: string | null, id = taskId, created = now) => ({
  id,
  agent_id: agentId,
  agent_version: 1,
  status,
  result,
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
const refundTask = task("waiting_approval", null, null, refundTaskId, at(15, "09:12:00"))

const refundAction = {
  connection_id: connectionId,
  operation_id: "createRefund",
  requires_approval: true,
  approval_condition: { argument: "body_params.amount", op: "gt", value: 100 }
}
const refundSkill = {
  name: "Refunds",
  description: "Refund an order; refunds above 100 USD wait for an Admin.",
  actions: [refundAction],
  visibility: "restricted",
  allowlist: [agentId]
}
const skill = (status: string, published_at: string | null) => ({
  id: skillId,
  ...refundSkill,
  owner_id: adaId,
  status,
  version: 1,
  created_at: at(14, "10:00:00"),
  updated_at: published_at ?? at(14, "10:00:00"),
  published_at
})
const publishedSkill = skill("published", at(14, "10:05:00"))

const approval = (status: string, decided: { at: string; reason: string } | null) => ({
  id: approvalId,
  task_id: refundTaskId,
  agent_id: agentId,
  skill_id: skillId,
  tool: "createRefund",
  arguments: { path_params: { id: "1234" }, body_params: { amount: 249.9 } },
  status,
  kind: "tool_call",
  requested_at: at(15, "09:12:05"),
  expires_at: at(16, "09:12:05"),
  decided_at: decided?.at ?? null,
  decided_by: decided === null ? null : byAda,
  reason: decided?.reason ?? null
})

const approvedAt = at(15, "09:14:30")
const approvalReason = "Parcel arrived damaged; photos in the ticket."

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

const file = (id: string, name: string, size: number, sha256: string, scope: "organization" | "agent") => ({
  id,
  name,
  size,
  sha256,
  content_type: "text/markdown",
  scope,
  agent_id: scope === "agent" ? agentId : null,
  owner: scope === "agent" ? { type: "agent", id: agentId } : { type: "user", id: adaId },
  created_at: scope === "agent" ? at(15, "07:00:08") : at(13, "14:00:00")
})
const returnsPolicy = file(
  fileId,
  "policies/returns.md",
  3412,
  "68e5bd0935fb8c44744beb25635a0bea68e4e9906f5bbd604a0b4467861bd748",
  "organization"
)

const knowledgeBase = {
  id: knowledgeBaseId,
  name: "Customer policies",
  description: "Returns, refunds and shipping policies of the shop.",
  language: "english",
  document_count: 0,
  created_at: at(13, "14:10:00"),
  updated_at: at(13, "14:10:00")
}

const orderStatusCode = `export default async (input, ctx) => {
  ctx.log("looking up order " + input.order_id)
  const answer = await ctx.connectors.invoke(input.connection_id, "getOrder", { path_params: { id: input.order_id } })
  return { order_id: input.order_id, status: answer.body.status }
}`
const orderStatusFunction = {
  name: "order_status",
  description: "The status of an order, by its number.",
  input_schema: {
    type: "object",
    required: ["order_id", "connection_id"],
    properties: { order_id: { type: "string" }, connection_id: { type: "string", format: "uuid" } }
  },
  code: orderStatusCode,
  timeout_ms: 5000,
  memory_mb: 32
}

/** A day of one agent's usage (`group_by=agent`). */
const usageRow = (day: number, calls: number, cost_usd: number, tasks: number) => ({
  bucket_start: at(day, "00:00:00"),
  agent_id: agentId,
  model_calls: calls,
  input_tokens: calls * 1850,
  output_tokens: calls * 120,
  cached_tokens: calls * 600,
  cost_usd,
  tasks_completed: tasks,
  tasks_error: 0,
  tasks_cancelled: 0,
  task_duration_p50_ms: 4100,
  task_duration_p95_ms: 9800,
  connector_calls_2xx: tasks,
  connector_calls_3xx: 0,
  connector_calls_4xx: 0,
  connector_calls_5xx: 0,
  connector_calls_failed: 0
})

/** Two links of the organization's hash chain: each record's `prev_hash` is the one before's `hash`. */
const hashes = [
  "098922381e1cad712462d5a5f685036c1b4a97b7b57466bab2a292ad458e2258",
  "92bdfe5fab7563508b62fd242e918f1e2e3dd35d355950835024e22eae98cf18",
  "08985508a8775c71f7cd3c2758168fdd7a50145bf37b06e3bba79d9a9e7a0234"
]
interface AuditRecord {
  readonly id: string
  readonly time: string
  readonly action: string
  readonly targets: ReadonlyArray<{ type: string; id: string; name?: string }>
  readonly details: Record<string, unknown>
  readonly request_id: string
}
/** The `link`th record of the chain above: Ada, with her personal key and curl. */
const auditEvent = (link: 1 | 2, record: AuditRecord) => ({
  ...record,
  seq: 56 + link,
  organization_id: organizationId,
  actor: byAda,
  outcome: "success",
  ip: "203.0.113.7",
  user_agent: "curl/8.5.0",
  prev_hash: hashes[link - 1],
  hash: hashes[link]
})

const judged = (words: ReadonlyArray<string>, decision: string, rule: string) => ({ words, decision, rule })
const commandPolicy = {
  default_action: "deny",
  rules: [
    { pattern: "npm run *", action: "allow" },
    { pattern: "git push *", action: "require_approval" },
    { pattern: "rm *", action: "deny" }
  ]
}

export const operationExamples: Record<string, OperationExample> = {
  me: {
    response: ok({
      organization: { id: organizationId, name: "Acme Retail", created_at: at(10, "08:00:00") },
      user: ada,
      key: personalKey,
      role: "admin",
      role_display: "Admin"
    })
  },
  listMembers: { response: ok(list(member(ada, "admin", "Admin", 10), member(grace, "builder", "Builder", 13))) },
  createMember: {
    request: { email: grace.email, name: grace.name, role: "builder" },
    response: created(member(grace, "builder", "Builder", 13))
  },
  createApiKey: {
    request: { name: "CI deploys", kind: "organization", role: "builder" },
    response: created({
      ...ciKey,
      last_used_at: null,
      api_key: "sy_k3x9m2p7q4wz_bA-cNtTtSBlgj2Hn_TCJoiqj4QJ1EON8cL9WqS2TqLc"
    })
  },
  listApiKeys: { response: ok(list(personalKey, ciKey)) },
  listTools: { response: ok({ ...list(connector([connection])), next_cursor: null }) },
  createConnector: {
    request: { spec: ordersSpec, name: "Orders" },
    response: created({ ...connector([]), import_report: { imported: 2, skipped: [], warnings: [] } })
  },
  listOperations: {
    response: ok([
      operation("get_orders_id", "getOrder", "get", "/orders/{id}", "Get an order"),
      operation("post_orders_id_refunds", "createRefund", "post", "/orders/{id}/refunds", "Refund an order")
    ])
  },
  createConnection: {
    request: {
      name: connection.name,
      access_scope: "organizational",
      credentials: { type: "bearer", token: "orders-api-token" }
    },
    response: created(connection)
  },
  listConnections: { response: ok([connection]) },
  invokeOperation: {
    request: { path_params: { id: "1234" }, query_params: { expand: "items" } },
    response: ok({ id: "1234", status: "shipped" })
  },
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
  listAgents: { response: ok(list(updatedAgent)) },
  getAgent: { response: ok(updatedAgent) },
  updateAgent: { request: { max_steps: 15 }, response: ok(updatedAgent) },
  invokeAgent: {
    request: { input: { text: "Where is order 1234?", user } },
    response: ok(task("completed", orderAnswer, at(15, "09:30:04")))
  },
  listTasks: { response: ok(page(task("completed", orderAnswer, at(15, "09:30:04")), refundTask, digestTask)) },
  getTask: { response: ok(task("executing", null, null)) },
  cancelTask: { response: ok({ ...refundTask, status: "cancelled", finished_at: at(15, "09:31:00") }) },
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
  },
  createSkill: { request: refundSkill, response: created(skill("draft", null)) },
  publishSkill: { response: ok(publishedSkill) },
  attachSkill: { response: ok({ skill: publishedSkill, attached_at: at(14, "10:06:00"), allowed: true }) },
  listApprovals: { response: ok(page(approval("pending", null))) },
  approveApproval: {
    request: { reason: approvalReason },
    response: ok(approval("approved", { at: approvedAt, reason: approvalReason }))
  },
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
  },
  uploadFile: { response: created(returnsPolicy) },
  listFiles: {
    response: ok(page(
      file(
        reportFileId,
        "digests/2026-01-15.md",
        918,
        "1ec79c399e87383b131c7673d45177b041a9d4cf0208e3f22521679a793ec398",
        "agent"
      ),
      returnsPolicy
    ))
  },
  createKnowledgeBase: {
    request: { name: knowledgeBase.name, description: knowledgeBase.description, language: "english" },
    response: created(knowledgeBase)
  },
  addKnowledgeDocument: {
    request: { name: "policies/returns.md", file_id: fileId },
    response: accepted({
      id: documentId,
      knowledge_base_id: knowledgeBaseId,
      name: "policies/returns.md",
      format: "md",
      size: returnsPolicy.size,
      source: { type: "file", file_id: fileId, url: null },
      status: "processing",
      progress: 0,
      chunk_count: 0,
      error: null,
      created_at: at(13, "14:12:00"),
      updated_at: at(13, "14:12:00")
    })
  },
  searchKnowledgeBase: {
    request: { query: "refund damaged parcel", limit: 5 },
    response: ok({
      items: [{
        knowledge_base_id: knowledgeBaseId,
        document_id: documentId,
        document_name: "policies/returns.md",
        chunk_id: "490ba288-9b4a-4361-9b85-16cc325e60b7",
        chunk_index: 3,
        heading_path: ["Returns", "Damaged goods"],
        score: 0.42,
        snippet: "A **damaged** **parcel** is **refunded** in full, shipping included.",
        text: "A damaged parcel is refunded in full, shipping included, when the customer reports it within 14 days."
      }]
    })
  },
  createFunction: {
    request: orderStatusFunction,
    response: created({
      id: functionId,
      ...orderStatusFunction,
      version: 1,
      current_version: 1,
      created_at: at(14, "12:00:00"),
      updated_at: at(14, "12:00:00")
    })
  },
  invokeFunction: {
    request: { input: { order_id: "1234", connection_id: connectionId } },
    response: ok({
      output: { order_id: "1234", status: "shipped" },
      logs: ["looking up order 1234"],
      logs_truncated: false,
      duration_ms: 96.4,
      version: 1
    })
  },
  getUsage: {
    response: ok({
      from: "2025-12-16T00:00:00.000000Z",
      to: now,
      bucket: "day",
      group_by: ["agent"],
      rows: [usageRow(14, 12, 0.97, 5), usageRow(15, 9, 0.87, 4)],
      budgets: [{
        agent_id: agentId,
        agent_name: agent.name,
        period: "month",
        period_start: at(1, "00:00:00"),
        limit_usd: 50,
        spent_usd: 1.84,
        exhausted: false
      }]
    })
  },
  listAuditEvents: {
    response: ok(page(
      auditEvent(2, {
        id: "cdaca101-23ff-45ec-9501-09d14fcd4465",
        time: updatedAgent.updated_at,
        action: "UPDATE_AGENT",
        targets: [{ type: "agent", id: agentId, name: agent.name }],
        details: { changed: ["max_steps"] },
        request_id: "1a9e4c7b-2d5f-4e8a-b3c6-9f0d2e7a5b41"
      }),
      auditEvent(1, {
        id: "c615aaaf-d78b-4c5f-80d0-300244eab44f",
        time: approvedAt,
        action: "APPROVE_TOOL_CALL",
        targets: [{ type: "approval", id: approvalId, name: "createRefund" }, { type: "task", id: refundTaskId }],
        details: { reason: approvalReason },
        request_id: "7d3f0c2a-5b1e-4f8d-9a6c-2e4b8d1f0a3c"
      })
    ))
  },
  putCommandPolicy: {
    request: commandPolicy,
    response: ok({ agent_id: agentId, ...commandPolicy, is_default: false, updated_at: at(14, "15:00:00") })
  },
  checkCommand: {
    request: { command: "npm run build && git push origin main", cwd: "/workspace/shop" },
    response: ok({
      decision: "pending",
      rule: "git push *",
      approval_id: commandApprovalId,
      commands: [
        judged(["npm", "run", "build"], "allow", "npm run *"),
        judged(["git", "push", "origin", "main"], "require_approval", "git push *")
      ]
    })
  }
}
