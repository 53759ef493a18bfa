/** What the provider tests share: a request with a tool, a connection to a test server, and a recording call. */
import { Agent } from "undici"
import { afterAll, beforeAll, beforeEach } from "vitest"
import type {
  CallOptions,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ProviderConnection,
  ToolSpec
} from "../../../src/agents/models/ModelProvider.js"
import { type ModelServer, type ModelServerKind, startModelServer } from "../../support/ModelServers.js"

export const weatherTool: ToolSpec = {
  name: "get_weather",
  description: "Current weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}

export const baseRequest: ModelRequest = {
  model: "test-model",
  instructions: "You are terse.",
  messages: [{ role: "user", text: "Weather in Paris?" }],
  tools: [weatherTool]
}

/** A connection to a test server; `{ apiKey: undefined }` for a keyless one (a local model server). */
export const connectionTo = (
  baseUrl: string,
  dispatcher: Agent,
  options: { readonly apiKey?: string | undefined } = {}
): ProviderConnection => ({ baseUrl, apiKey: "apiKey" in options ? options.apiKey : "sk-test-key", dispatcher })

/** Calls the provider and collects the text deltas it reports. */
export const callRecording = async (
  provider: ModelProvider,
  connection: ProviderConnection,
  request: ModelRequest,
  options: Partial<CallOptions> = {}
): Promise<{ response: ModelResponse; deltas: Array<string> }> => {
  const deltas: Array<string> = []
  const response = await provider.call(connection, request, {
    signal: options.signal ?? new AbortController().signal,
    onTextDelta: (delta) => deltas.push(delta)
  })
  return { response, deltas }
}

/** The rejection of a promise (fails the test if it resolves). */
export const rejectionOf = async (promise: Promise<unknown>): Promise<any> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected the call to fail, it succeeded")
}

/**
 * A protocol test server for one describe block: started before its tests, emptied before each, closed
 * after, with the dispatcher the calls go through.
 */
export const useModelServer = (kind: ModelServerKind) => {
  const dispatcher = new Agent()
  let server: ModelServer | undefined
  beforeAll(async () => {
    server = await startModelServer(kind)
  })
  afterAll(async () => {
    await server?.close()
    await dispatcher.close()
  })
  beforeEach(() => {
    server!.script.length = 0
    server!.requests.length = 0
  })
  return {
    dispatcher,
    get server(): ModelServer {
      return server!
    }
  }
}
