/**
 * The five-line examples of docs/guides/clients.md (and the README), kept here so the client test's `tsc`
 * checks them as written. Not run: they are the same calls fetchClient.ts and effectClient.ts run.
 */
import { Effect } from "effect"
import { readFile } from "node:fs/promises"
import { AgentId, makeFetchBackedClient } from "switchyard/client"
import { allItems, createFetchClient } from "switchyard/client/fetch"

export const fetchExample = async (agentId: string, apiKey: string) => {
  const client = createFetchClient({ baseUrl: "http://localhost:8080", apiKey })
  const input = { text: "Where is order 1234?", user: { id: "u-1", email: "ada@example.com" } }
  const { data, error } = await client.POST("/v1/agents/{agent_id}/invoke", {
    params: { path: { agent_id: agentId } },
    body: { input }
  })
  console.log(error ? `${error.error.code}: ${error.error.message}` : data.result)
}

export const effectExample = (agentId: string, apiKey: string) => {
  const input = { text: "Where is order 1234?", user: { id: "u-1", email: "ada@example.com" } }
  const invoke = Effect.gen(function*() {
    const client = yield* makeFetchBackedClient({ baseUrl: "http://localhost:8080", apiKey })
    return yield* client.agents.invokeAgent({
      path: { agent_id: AgentId.make(agentId) },
      urlParams: {},
      headers: {},
      payload: { input }
    })
  })
  return Effect.runPromise(invoke).then((task) => console.log(task.result))
}

/** The README's Effect example, as written there (one `flatMap` instead of a generator). */
export const effectReadmeExample = (agentId: string, apiKey: string) => {
  const input = { text: "Where is order 1234?", user: { id: "u-1", email: "ada@example.com" } }
  const invoke = Effect.flatMap(
    makeFetchBackedClient({ baseUrl: "http://localhost:8080", apiKey }),
    (client) =>
      client.agents.invokeAgent({
        path: { agent_id: AgentId.make(agentId) },
        urlParams: {},
        headers: {},
        payload: { input }
      })
  )
  return Effect.runPromise(invoke).then((task) => console.log(task.result))
}

/** The clients guide's upload and download with the plain-fetch client, as written there. */
export const filesExample = async (apiKey: string) => {
  const client = createFetchClient({ baseUrl: "http://localhost:8080", apiKey })
  const { data: file } = await client.POST("/v1/files", {
    params: { query: { name: "reports/q1.csv" } },
    body: await readFile("q1.csv"),
    headers: { "content-type": "text/csv" }
  })
  const { data: csv } = await client.GET("/v1/files/{file_id}/content", {
    params: { path: { file_id: file!.id } },
    parseAs: "text"
  })
  return csv
}

/** The clients guide's paging example, as written there. */
export const pagingExample = async (apiKey: string) => {
  const client = createFetchClient({ baseUrl: "http://localhost:8080", apiKey })
  for await (
    const file of allItems((after) => client.GET("/v1/files", { params: { query: { prefix: "reports/", ...after } } }))
  ) console.log(file.name)
}
