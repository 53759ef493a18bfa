/**
 * What a user of the Effect client writes (`switchyard/client`, HttpApiClient over schema/):
 * test/client/Clients.test.ts typechecks this file and runs it against a live node.
 */
import { Effect } from "effect"
import { AgentId, ConnectionId, ConnectorId, FileId, makeFetchBackedClient } from "switchyard/client"

export interface World {
  readonly baseUrl: string
  readonly apiKey: string
  readonly connectorId: string
  readonly connectionId: string
  readonly agentId: string
}

export const runEffectClient = (world: World) =>
  Effect.gen(function*() {
    const client = yield* makeFetchBackedClient({ baseUrl: world.baseUrl, apiKey: world.apiKey })

    const pet = yield* client.tools.invokeOperation({
      path: {
        connector_id: ConnectorId.make(world.connectorId),
        connection_id: ConnectionId.make(world.connectionId),
        operation_id: "getPet"
      },
      payload: { path_params: { petId: "8" } }
    })

    const user = { id: "client-user", email: "ada@example.com" }
    const sync = yield* client.agents.invokeAgent({
      path: { agent_id: AgentId.make(world.agentId) },
      urlParams: {},
      headers: {},
      payload: { input: { text: "Say hello", user } }
    })

    const accepted = yield* client.agents.invokeAgent({
      path: { agent_id: AgentId.make(world.agentId) },
      urlParams: { asynchronous: "true" },
      headers: { "idempotency-key": `effect-${world.agentId}` },
      payload: { input: { text: "Say goodbye", user } }
    })
    let task = accepted
    while (task.status === "pending" || task.status === "executing") {
      task = yield* client.agents.getTask({ path: { task_id: task.id }, urlParams: { wait: 10 } })
    }
    const thread = yield* client.agents.getThread({ path: { task_id: task.id } })

    // a typed failure: the error class the envelope decodes to
    const missing = yield* client.agents.getAgent({
      path: { agent_id: AgentId.make("00000000-0000-4000-8000-000000000000") }
    }).pipe(
      Effect.flip
    )
    // a workspace file: bytes go as application/octet-stream, a string as text/plain; read back as bytes
    const uploaded = yield* client.files.uploadFile({
      urlParams: { name: `effect-${world.agentId}.txt` },
      payload: "hello from Effect"
    })
    const content = yield* client.files.getFileContent({ path: { file_id: FileId.make(uploaded.id) } })
    const uploadedBytes = yield* client.files.uploadFile({
      urlParams: { name: `effect-${world.agentId}.bin` },
      payload: new Uint8Array([0, 1, 255])
    })
    const files = {
      text: { contentType: uploaded.content_type, size: uploaded.size, body: new TextDecoder().decode(content) },
      bytes: { contentType: uploadedBytes.content_type, size: uploadedBytes.size }
    }
    return { pet, sync, accepted, task, thread, missing, files }
  })
