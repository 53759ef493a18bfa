import { Effect, Option, Schema } from "effect"
import type { ModelConfig } from "../../schema/Agents.js"
import { ModelGateway } from "../agents/ModelGateway.js"
import { ModelProviders } from "../agents/ModelProviders.js"
import type { Message, ToolSpec } from "../agents/models/ModelProvider.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { defineTool, type McpTool, type ToolContext, ToolText } from "../mcp/McpTool.js"
import type { McpCaller } from "../oauth/TokenVerifier.js"

const MAX_STEPS = 10
const TOOL_RESULT_LIMIT = 64 * 1024
const DEFAULT_MODEL: Record<"openai" | "anthropic", string> = {
  openai: "gpt-4.1-mini",
  anthropic: "claude-sonnet-4-5"
}

const INSTRUCTIONS =
  "You are Switchyard, the assistant built into the Switchyard AI-agent platform. You answer questions about " +
  "the person's own Switchyard organization: its agents, their tasks (threads, model usage), connectors and " +
  "connections. Use the tools to look things up; each runs as the person asking, with their permissions, and " +
  "only reads. You cannot change anything: say so and point to the API or the MCP endpoint /mcp/ when asked to. " +
  "Never invent ids or results; if a tool fails, say what failed. Answer briefly."

/** What the agent may call: the read-only tools of `/mcp/`, run as the caller (see McpEndpoint.ts). */
export interface ReadTools {
  readonly specs: ReadonlyArray<ToolSpec>
  readonly run: (
    name: string,
    args: unknown,
    context: ToolContext
  ) => Effect.Effect<{ readonly isError: boolean; readonly text: string }>
}

const ToolCallTrace = Schema.Struct({
  name: Schema.String,
  arguments: Schema.Unknown,
  is_error: Schema.Boolean
})

const AskAnswer = Schema.Struct({
  answer: Schema.String,
  model: Schema.Struct({ provider: Schema.String, name: Schema.String }),
  tool_calls: Schema.Array(ToolCallTrace).annotations({ description: "What the agent looked up, in order." }),
  usage: Schema.Struct({ model_calls: Schema.Int, input_tokens: Schema.Int, output_tokens: Schema.Int })
})

/**
 * The model the built-in agent uses in an organization: the provider the organization configured most
 * recently (`PUT /v1/model-providers/{provider}`), else the deployment's OpenAI settings.
 * SWITCHYARD_BUILTIN_AGENT_MODEL names the model (required for an `openai-chat` server).
 */
const modelFor = (caller: McpCaller, override: Option.Option<string>) =>
  Effect.gen(function*() {
    const providers = yield* ModelProviders
    const configured = yield* providers.list(caller.principal)
    const latest = [...configured].sort((a, b) => b.updated_at.getTime() - a.updated_at.getTime())[0]
    const provider = latest?.provider ?? "openai"
    const name = Option.getOrUndefined(override) ?? (provider === "openai-chat" ? undefined : DEFAULT_MODEL[provider])
    return name === undefined ? undefined : ({ provider, name } satisfies ModelConfig)
  })

/**
 * The built-in agent, "switchyard" (BUILTIN_AGENT_NAME in src/oauth/Resources.ts), available in every
 * organization without being stored: it answers questions about the organization by calling the read-only
 * tools of `/mcp/` **as the person asking** (their token's user, organization, role and scope), in this
 * process, through the same services and authorization checks as REST. It holds no credential of its own
 * and cannot do more than the person could with those tools; it cannot change anything. Its model calls
 * go to the organization's own model provider settings.
 */
export const makeAskTool = (tools: ReadTools) =>
  Effect.gen(function*() {
    const gateway = yield* ModelGateway
    const providers = yield* ModelProviders
    const override = (yield* SwitchyardConfig).builtinAgentModel
    const tool: McpTool = defineTool({
      name: "ask",
      description: "Ask Switchyard's built-in agent about your organization: agents, tasks, connectors. It " +
        "looks things up with read-only tools that run as you, and answers in prose with what it called.",
      input: Schema.Struct({
        question: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(20_000)).annotations({
          description: "The question, e.g. \"Which of my tasks failed today, and why?\""
        })
      }),
      output: AskAnswer,
      annotations: {
        title: "Ask the Switchyard agent",
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true
      },
      run: ({ question }, context) =>
        Effect.gen(function*() {
          const model = yield* modelFor(context.caller, override).pipe(Effect.provideService(ModelProviders, providers))
          if (model === undefined) {
            return yield* Effect.fail({
              code: "model_not_configured",
              message: "The built-in agent needs a model: set SWITCHYARD_BUILTIN_AGENT_MODEL for an openai-chat server."
            })
          }
          const messages: Array<Message> = [{ role: "user", text: question }]
          const trace: Array<typeof ToolCallTrace.Type> = []
          const usage = { model_calls: 0, input_tokens: 0, output_tokens: 0 }
          // MCP progress must increase with every notification: one per lookup
          let lookups = 0
          for (let step = 1; step <= MAX_STEPS; step++) {
            const { response } = yield* gateway.call(context.caller.principal.organizationId, model, {
              model: model.name,
              instructions: INSTRUCTIONS,
              messages,
              tools: tools.specs
            }).pipe(Effect.mapError((e) => ({ code: e.code, message: `The model call failed: ${e.message}` })))
            usage.model_calls++
            usage.input_tokens += response.usage.input_tokens
            usage.output_tokens += response.usage.output_tokens
            messages.push({ role: "assistant", text: response.text, tool_calls: response.tool_calls })
            if (response.tool_calls.length === 0) {
              const answer = response.text ?? ""
              return new ToolText(answer, { answer, model, tool_calls: trace, usage })
            }
            for (const call of response.tool_calls) {
              yield* context.progress(++lookups, `looking up: ${call.name}`)
              const done = yield* tools.run(call.name, call.arguments, context)
              trace.push({ name: call.name, arguments: call.arguments, is_error: done.isError })
              const content = done.text.length > TOOL_RESULT_LIMIT
                ? `${done.text.slice(0, TOOL_RESULT_LIMIT)}…[truncated]`
                : done.text
              messages.push({ role: "tool", tool_call_id: call.id, name: call.name, content })
            }
          }
          return yield* Effect.fail({
            code: "max_steps",
            message: `The agent stopped after ${MAX_STEPS} model calls without a final answer; ask more narrowly.`
          })
        })
    })
    return tool
  })
