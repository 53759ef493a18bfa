import type { Context, Effect, Schema, Tracer } from "effect"
import type { Agents } from "../agents/Agents.js"
import type { CommandPolicies } from "../commands/CommandPolicies.js"
import type { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import type { Connections } from "../connectors/Connections.js"
import type { ConnectorCatalog } from "../connectors/ConnectorCatalog.js"
import type { Egress } from "../connectors/Egress.js"
import type { OperationInvoker } from "../connectors/OperationInvoker.js"
import type { InvokeStream } from "../events/InvokeStream.js"
import type { Files } from "../files/Files.js"
import type { Workspace } from "../files/Workspace.js"
import type { Functions } from "../functions/Functions.js"
import type { KnowledgeBases } from "../knowledge/KnowledgeBases.js"
import type { McpCaller } from "../oauth/TokenVerifier.js"
import type { Schedules } from "../schedules/Schedules.js"
import type { Approvals } from "../skills/Approvals.js"
import type { Skills } from "../skills/Skills.js"
import type { Tasks } from "../tasks/Tasks.js"
import type { Usage } from "../usage/Usage.js"
import type { ToolJson } from "./ToolJson.js"

/** The services a tool may call: the same ones the REST handlers call, with the caller's Principal. */
export type ToolServices =
  | Agents
  | Tasks
  | Connections
  | ConnectorCatalog
  | OperationInvoker
  | Skills
  | Approvals
  | Files
  | Workspace
  | Schedules
  | Functions
  | Usage
  | InvokeStream
  | KnowledgeBases
  | CommandPolicies
  // for invoke_operation to classify a body that fails midway as OperationInvoker classifies a failed call
  | Egress
  | SwitchyardConfig

export interface ToolContext {
  readonly caller: McpCaller
  /** Whether the client asked for progress notifications (and will wait longer for them). */
  readonly wantsProgress: boolean
  /** Sends `notifications/progress` when the client asked for it (a `progressToken`); otherwise nothing. */
  readonly progress: (progress: number, message?: string) => Effect.Effect<void>
  /**
   * Whether the client cancelled this call (`notifications/cancelled`). The call is then interrupted: a tool
   * whose work outlives the call (invoke_agent's task) checks this in `Effect.onInterrupt` to stop that work
   * too, and not when the interruption is a node stopping.
   */
  readonly cancelled: Effect.Effect<boolean>
}

/** What a tool's `fast` variant is given: the caller, the services, and a way to hear that the client left. */
export interface FastToolContext {
  readonly caller: McpCaller
  readonly services: Context.Context<ToolServices>
  /** `abort` runs if the client goes away before the tool is done. */
  readonly onAbort: (abort: () => void) => void
  /** The caller's span (its `traceparent`, while spans are exported), for the tool's own spans. */
  readonly parentSpan?: Tracer.AnySpan | undefined
}

export type ToolOutcome<O> =
  | { readonly ok: true; readonly value: O | ToolJson<O> }
  | { readonly ok: false; readonly error: ToolFailure }

/** A failure a tool reports to the model as its result (`isError`), in the REST error's terms. */
export interface ToolFailure {
  readonly code: string
  readonly message: string
  readonly details?: unknown
}

export interface ToolAnnotations {
  readonly title: string
  readonly readOnlyHint: boolean
  readonly destructiveHint: boolean
  readonly idempotentHint: boolean
  readonly openWorldHint: boolean
}

/**
 * One MCP tool = one API call. `input` is built from the contract's schemas in `schema/` (its JSON Schema is
 * derived, never written by hand); `output` encodes the result to its REST wire form.
 */
export interface McpTool<I = any, O = any> {
  readonly name: string
  readonly description: string
  readonly input: Schema.Schema<I, any, never>
  readonly output: Schema.Schema<O, any, never>
  readonly annotations: ToolAnnotations
  readonly run: (
    input: I,
    context: ToolContext
  ) => Effect.Effect<O | ToolText<O> | ToolJson<O>, ToolFailure, ToolServices>
  /**
   * Optional: the same call without a fiber, for the plain-Node fast path (McpFastPath.ts), when everything it
   * needs is in this node's memory. `undefined` declines, and `run` runs instead. Both must give the same
   * answers (test/mcp/FastPath.test.ts runs every case through both); a rejected promise is a defect.
   */
  readonly fast?: (input: I, context: FastToolContext) => Promise<ToolOutcome<O>> | undefined
}

/** A result with a person-readable text besides its structured form (e.g. an agent's answer). */
export class ToolText<O> {
  constructor(readonly text: string, readonly value: O) {}
}

/** Identity helper that keeps `I` and `O` inferred from the schemas. */
export const defineTool = <I, O>(tool: McpTool<I, O>): McpTool<I, O> => tool
