/**
 * What a user of the plain-fetch client writes (`switchyard/client/fetch`): test/client/Clients.test.ts
 * typechecks this file and runs it against a live node.
 */
import { createFetchClient } from "switchyard/client/fetch"
import type { components } from "switchyard/client/fetch"

export interface World {
  readonly baseUrl: string
  readonly apiKey: string
  readonly connectorId: string
  readonly connectionId: string
  readonly agentId: string
}

type Task = components["schemas"]["Task"]
type ThreadEvent = components["schemas"]["ThreadEvent"]

export const runFetchClient = async (world: World) => {
  const client = createFetchClient({ baseUrl: world.baseUrl, apiKey: world.apiKey })

  // connector invoke: the target's answer, passed through
  const pet = await client.POST("/v1/tools/connectors/{connector_id}/connections/{connection_id}/{operation_id}", {
    params: { path: { connector_id: world.connectorId, connection_id: world.connectionId, operation_id: "getPet" } },
    body: { path_params: { petId: "7" } }
  })

  // agent invoke, synchronous: the finished task
  const user = { id: "client-user", email: "ada@example.com" }
  const sync = await client.POST("/v1/agents/{agent_id}/invoke", {
    params: { path: { agent_id: world.agentId } },
    body: { input: { text: "Say hello", user } }
  })
  const finished: Task | undefined = sync.data

  // asynchronous: 202 with the pending task, then a long poll until it ends (`wait` is a number)
  const accepted = await client.POST("/v1/agents/{agent_id}/invoke", {
    params: { path: { agent_id: world.agentId }, query: { asynchronous: true } },
    body: { input: { text: "Say goodbye", user } }
  })
  let task = accepted.data
  while (task !== undefined && (task.status === "pending" || task.status === "executing")) {
    const polled = await client.GET("/v1/tasks/{task_id}", {
      params: { path: { task_id: task.id }, query: { wait: 10 } }
    })
    task = polled.data
  }

  // the task's thread: `data` typed by `type`
  const thread = await client.GET("/v1/tasks/{task_id}/thread", {
    params: { path: { task_id: task?.id ?? "" } }
  })
  const texts = (thread.data?.events ?? []).flatMap((event: ThreadEvent) =>
    event.type === "agent_message" || event.type === "user_message" ? [event.data.text] : []
  )

  // an error: the envelope, its code one of the operation's
  const missing = await client.GET("/v1/agents/{agent_id}", {
    params: { path: { agent_id: "00000000-0000-4000-8000-000000000000" } }
  })
  const code: "not_found" | "validation_failed" | string | undefined = missing.error?.error.code

  return {
    pet: {
      status: pet.response.status,
      body: pet.data as { path: string; query: Record<string, string> },
      error: pet.error
    },
    sync: { status: sync.response.status, result: finished?.result, taskStatus: finished?.status },
    accepted: { status: accepted.response.status, location: accepted.response.headers.get("location") },
    finished: task,
    texts,
    missing: { status: missing.response.status, code }
  }
}
