/**
 * What a user of the plain-fetch client writes (`switchyard/client/fetch`): test/client/Clients.test.ts
 * typechecks this file and runs it against a live node.
 */
import { allItems, createFetchClient, SwitchyardError } from "switchyard/client/fetch"
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

  // a workspace file: a string body goes out as it is, with its content-type; bytes as they are
  const text = await client.POST("/v1/files", {
    params: { query: { name: `client-${world.agentId}.csv` } },
    body: "a,b\n1,2\n",
    headers: { "content-type": "text/csv" }
  })
  const bytes = await client.POST("/v1/files", {
    params: { query: { name: `client-${world.agentId}.bin` } },
    body: new Uint8Array([0, 1, 255]),
    headers: { "content-type": "application/octet-stream" }
  })
  const downloaded = await client.GET("/v1/files/{file_id}/content", {
    params: { path: { file_id: text.data?.id ?? "" } },
    parseAs: "text"
  })
  const downloadedBytes = await client.GET("/v1/files/{file_id}/content", {
    params: { path: { file_id: bytes.data?.id ?? "" } },
    parseAs: "arrayBuffer"
  })

  // every page of a list, one file a page
  const listed: Array<string> = []
  for await (
    const file of allItems((after) =>
      client.GET("/v1/files", { params: { query: { prefix: `client-${world.agentId}`, limit: 1, ...after } } })
    )
  ) listed.push(file.name)
  // an error answer while paging throws, with the envelope's code
  const pagingError = await (async () => {
    for await (
      const _ of allItems((after) =>
        client.GET("/v1/files", { params: { query: { cursor: after.cursor ?? "bogus" } } })
      )
    ) break
  })().then(() => undefined, (e: unknown) => e instanceof SwitchyardError ? { status: e.status, code: e.code } : e)

  return {
    listed,
    pagingError,
    files: {
      text: { status: text.response.status, contentType: text.data?.content_type, body: downloaded.data },
      bytes: {
        status: bytes.response.status,
        contentType: bytes.data?.content_type,
        body: downloadedBytes.data === undefined ? [] : [...new Uint8Array(downloadedBytes.data)]
      }
    },
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
