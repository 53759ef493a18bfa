/**
 * The five-line examples of docs/guides/clients.md (and the README), kept here so the client test's `tsc`
 * checks them as written. Not run: they are the same calls fetchClient.ts and effectClient.ts run.
 */
import { Effect } from "effect"
import { AgentId, makeFetchBackedClient } from "switchyard/client"
import { createFetchClient } from "switchyard/client/fetch"

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
