import { petstore } from "../connectors/support.js"
import { bootstrapOrg } from "./Bootstrap.js"
import { type Cluster, startCluster } from "./ClusterHarness.js"
import { eventually } from "./Poll.js"
import { startTargetServer, type TargetServer } from "./TargetServer.js"
import { migratedDatabase } from "./TestDatabase.js"
import { testEnvironment } from "./TestNode.js"

export interface Answer {
  readonly status: number
  readonly body: any
}

export interface Scenario {
  readonly cluster: Cluster
  readonly target: TargetServer
  readonly agentId: string
  /** `POST` path of the connector operation `getPet` on the scenario's connection. */
  readonly getPetPath: string
  readonly call: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Answer>
  /** The same, sent to node `index` itself rather than through the proxy. */
  readonly callAt: (
    index: number,
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>
  ) => Promise<Answer>
  /**
   * Async invokes of the agent, input `t<n>` for each n (scripts use `{{input}}` to tag their tool calls), with
   * Idempotency-Key `t<n>`: the proxy resends a request whose connection a killed node reset, and the key
   * makes that resend find the task the first one made instead of making a second task with the same input.
   */
  readonly invoke: (ns: ReadonlyArray<number>) => Promise<Array<Answer>>
  /** Long-polls each task to its end. */
  readonly ends: (accepted: ReadonlyArray<Answer>) => Promise<Array<Answer>>
  /** How many times the target saw `/pets/<id>`. */
  readonly callsTo: (id: string) => number
  /** Each tool call the tasks' threads record: its pet id, its outcome, and how many times the target saw it. */
  readonly toolCalls: (accepted: ReadonlyArray<Answer>) => Promise<Array<RecordedCall>>
  /** Node `index`'s `/readyz` answer (shards owned and total), undefined while it cannot answer. */
  readonly readyz: (index: number) => Promise<any>
  /** Polls until node `index` holds every shard; its `/readyz` answer then. */
  readonly holdingEveryShard: (index: number, timeoutMs: number) => Promise<any>
  readonly stop: () => Promise<void>
}

export interface RecordedCall {
  readonly pet: string
  readonly outcome: string
  readonly calls: number
}

/**
 * The recorded calls the target did not see as the fence promises: a call is made once; one whose outcome
 * is unknown (a run stopped while making it, and the next did not make it again) at most once.
 */
export const notOnce = (calls: ReadonlyArray<RecordedCall>) =>
  calls.filter((c) => c.outcome === "unknown" ? c.calls > 1 : c.calls !== 1)

/** Pauses between a task's steps, so that faults land while tasks are in flight. */
export const steppedScript = (stepMs: number) => [
  { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "{{input}}-a" } } }], delay_ms: stepMs },
  { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "{{input}}-b" } } }], delay_ms: stepMs },
  { text: "done: {{last_tool_result}}", delay_ms: stepMs }
]

/**
 * N node processes behind the round-robin proxy, one organization, a connector to a real target server
 * that records every call, and an agent whose scripted model calls a tool tagged with the task's input.
 */
export const startScenario = async (options: {
  readonly nodes: number
  readonly env?: Record<string, string>
  readonly script: ReadonlyArray<unknown>
}): Promise<Scenario> => {
  const target = await startTargetServer()
  const env = await testEnvironment({
    DATABASE_URL: await migratedDatabase(),
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    SWITCHYARD_SHARD_LOCK_EXPIRATION: "3 seconds",
    SWITCHYARD_SHARD_LOCK_REFRESH_INTERVAL: "1 second",
    ...options.env
  })
  // the organization is made while the nodes start (the database is migrated already)
  const [cluster, { api_key: apiKey }] = await Promise.all([
    startCluster({ nodes: options.nodes, env }),
    bootstrapOrg(env, "Chaos", "c@o.test")
  ])
  const callVia =
    (base: () => string) =>
    (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> =>
      fetch(base() + path, {
        method,
        headers: { "x-api-key": apiKey, "content-type": "application/json", ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      }).then(async (r) => ({ status: r.status, body: await r.json() }))
  const call = callVia(() => cluster.url)
  const callAt = (index: number, method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    callVia(() => cluster.nodes[index]!.process.baseUrl)(method, path, body, headers)

  const readyz = async (index: number) =>
    (await fetch(`${cluster.nodes[index]!.process.baseUrl}/readyz`).catch(() => undefined))?.json()

  const connector = await call("POST", "/v1/tools/connectors", { spec: petstore(target.url) })
  const connection = await call("POST", `/v1/tools/connectors/${connector.body.id}/connections`, {
    name: "pets",
    credentials: { type: "api_key", value: "k" }
  })
  const agent = await call("POST", "/v1/agents", {
    name: "steady",
    model: { provider: "scripted", script: options.script },
    skills: [{ connection_id: connection.body.id, operation_ids: ["getPet"] }]
  })
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`)
  return {
    cluster,
    target,
    agentId: agent.body.id,
    getPetPath: `/v1/tools/connectors/${connector.body.id}/connections/${connection.body.id}/getPet`,
    call,
    callAt,
    invoke: (ns) =>
      Promise.all(ns.map((n) =>
        call("POST", `/v1/agents/${agent.body.id}/invoke?asynchronous=true`, {
          input: { text: `t${n}`, user: { id: `u${n}`, email: `u${n}@example.com` } }
        }, { "idempotency-key": `t${n}` })
      )),
    ends: (accepted) => Promise.all(accepted.map((a) => call("GET", `/v1/tasks/${a.body.id}?wait=60`))),
    callsTo: (id) => target.requests.filter((r) => r.path === `/pets/${id}`).length,
    toolCalls: async (accepted) => {
      const threads = await Promise.all(accepted.map((a) => call("GET", `/v1/tasks/${a.body.id}/thread`)))
      return threads.flatMap((thread) =>
        thread.body.events.filter((e: any) => e.type === "tool_call").map((e: any) => {
          const pet = e.data.arguments.path_params.petId as string
          return {
            pet,
            outcome: e.data.outcome as string,
            calls: target.requests.filter((r) => r.path === `/pets/${pet}`).length
          }
        })
      )
    },
    readyz,
    holdingEveryShard: (index, timeoutMs) =>
      eventually(
        async () => {
          const ready = await readyz(index)
          return ready?.shards_total !== undefined && ready.shards_owned === ready.shards_total ? ready : undefined
        },
        timeoutMs,
        `node ${index} holding every shard`,
        250
      ),
    stop: async () => {
      await cluster.stop()
      await target.close()
    }
  }
}
