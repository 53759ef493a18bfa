/** What the provider tests share: a request with a tool, a connection to a test server, and a recording call. */
import { Agent } from "undici"
import type {
  CallOptions,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ProviderConnection,
  ToolSpec
} from "../../../src/agents/models/ModelProvider.js"

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
