import { Cause, Duration, Effect } from "effect"
import type { Readable } from "node:stream"
import { StringDecoder } from "node:string_decoder"
import type { BudgetExhausted } from "../../cluster/AgentEntity.js"
import { outcomeOf, type TaskOutcome } from "../../cluster/TaskEntity.js"
import type { TaskErrorCode } from "../../schema/Agents.js"
import type { InvokeOperation } from "../../schema/Connectors.js"
import type { TaskId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { BudgetLeases } from "../agents/BudgetLeases.js"
import { BuiltinTools } from "../agents/BuiltinTools.js"
import { BUDGETED_OUTPUT_TOKENS, ModelGateway } from "../agents/ModelGateway.js"
import type { Message, ToolCall, ToolSpec } from "../agents/models/ModelProvider.js"
import type { RunScope, ToolResult } from "../agents/ToolSet.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { Connections } from "../connectors/Connections.js"
import { CredentialVault } from "../connectors/CredentialVault.js"
import { lostConnection } from "../db/ConnectionLoss.js"
import { TaskOutput } from "../events/TaskOutput.js"
import { runPrincipal } from "../identity/RunPrincipal.js"
import { NodeMetrics } from "../observability/NodeMetrics.js"
import { leanSpansWhenTracing } from "../observability/Tracing.js"
import { Approvals, conditionHolds } from "../skills/Approvals.js"
import { type AttachedRow, Skills, type SkillTool } from "../skills/Skills.js"
import { LocalTasks } from "./LocalTasks.js"
import { TaskCompletions } from "./TaskCompletions.js"
import { type Attachments, type Claim, type ModelCallRecord, TaskRepo, type TaskRow } from "./TaskRepo.js"

const TOOL_RESULT_LIMIT = 64 * 1024

/**
 * Another run has claimed the task (its shard moved, and this node learned it late): this one stops as a
 * shard move stops it, leaving the task to the other.
 */
const superseded = (taskId: TaskId) =>
  Effect.zipRight(
    Effect.logWarning("a task run stopped: the task is no longer its own (another run claimed it, or it ended)").pipe(
      Effect.annotateLogs("task_id", taskId)
    ),
    Effect.interrupt
  )

type Outcome = typeof TaskOutcome.Type

interface Tool {
  readonly spec: ToolSpec
  /** A connector operation's, else null. */
  readonly connectionId: string | null
  readonly operationId: string | null
  /** A custom function's call, else undefined. */
  readonly fn?: { readonly id: string; readonly call: (args: unknown) => Effect.Effect<ToolResult> }
  /** Where it comes from and what it asks for: approval, a recorded violation on use. */
  readonly source: SkillTool
}

/** Reads a tool's response for the model: at most TOOL_RESULT_LIMIT bytes, then stops the download. */
const readBody = (body: Readable) =>
  Effect.async<string>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    let truncated = false
    body.on("data", (chunk: Buffer) => {
      chunks.push(chunk)
      size += chunk.length
      if (size >= TOOL_RESULT_LIMIT) {
        truncated = true
        body.destroy()
        // a StringDecoder leaves out a character the limit cut in two (toString made it U+FFFD)
        const kept = new StringDecoder("utf8").write(Buffer.concat(chunks).subarray(0, TOOL_RESULT_LIMIT))
        resume(Effect.succeed(kept + "…[truncated]"))
      }
    })
    body.on("end", () => !truncated && resume(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
    body.on("error", (e) => !truncated && resume(Effect.succeed(`[the response broke off: ${e.message}]`)))
  })

/**
 * Why a tool call's arguments cannot be used, if they cannot: every tool takes one JSON object, and a provider
 * hands over the model's raw text when it was not JSON (WireJson.parseArguments). The model is told, to try again.
 */
const argumentsProblem = (call: ToolCall): string | undefined => {
  const args = call.arguments
  if (typeof args === "object" && args !== null && !Array.isArray(args)) return undefined
  let why = `they are ${Array.isArray(args) ? "an array" : args === null ? "null" : `a ${typeof args}`}`
  if (typeof args === "string") {
    try {
      JSON.parse(args)
    } catch (e) {
      why = `they are not valid JSON (${(e as Error).message}; the answer may have been cut off at its output limit)`
    }
  }
  const shown = typeof args === "string" ? args : JSON.stringify(args)
  return `error: the call to ${call.name} was not made: its arguments must be one JSON object, and ${why}: ` +
    `${shown.length > 200 ? `${shown.slice(0, 200)}…` : shown}. Call it again with valid arguments.`
}

/**
 * Why a last turn without any text is no answer, when the model was stopped before it gave one: an empty
 * `completed` task would hide it (a reasoning model can spend its whole output limit before writing a word).
 */
const noAnswer = (finish: string | undefined, limit: number | undefined): string | undefined =>
  finish === "length"
    ? `The model's answer was cut off at its output limit${
      limit === undefined ? "" : ` of ${limit} tokens`
    } before it wrote any text: raise the agent's model.max_output_tokens.`
    : finish === "content_filter"
    ? "The model gave no answer: it refused, or the provider's content filter stopped it."
    : undefined

class Stop {
  constructor(
    readonly status: "error" | "completed",
    readonly result: string,
    /** Why it failed (status error); null for an answer. */
    readonly errorCode: TaskErrorCode | null,
    /** The model call that ended the run, recorded together with the end (one commit). */
    readonly modelCall?: ModelCallRecord,
    /** Ends the task only while the run's claim of this epoch holds (a failed run: TaskRepo.finishWith). */
    readonly fence?: number
  ) {}
}

/** What a task that failed inside Switchyard (a defect of its run) says. */
export const RUN_FAILED = "The task failed inside Switchyard; see the node's logs."

/**
 * What a run's failure does, before its claim and after (the one rule for both). An interruption stays one.
 * A failure for its node's sake (the task no longer its node's, the database out of reach or its connections
 * ended while the node was paused) stops as if interrupted: the task stays unfinished, and its shard's owner,
 * this node or the next, resumes it (the sweep). A failure of the run's own is logged, then `end` ends the
 * task in error instead of retrying it forever.
 */
export const onRunFailure = <A, R>(cause: Cause.Cause<unknown>, control: RunControl, end: Effect.Effect<A, never, R>) =>
  Cause.isInterruptedOnly(cause)
    ? Effect.failCause(cause)
    : control.elsewhere() || lostConnection(cause)
    ? Effect.zipRight(Effect.logWarning("task run stopped; its task is left to be resumed", cause), Effect.interrupt)
    : Effect.zipRight(Effect.logError("task run failed", cause), end)

/**
 * What a run shares with TaskRuns, which stops it. A run making a tool call (from the write that marks it
 * made to the write that records its result) is not interrupted for a shard move or a shutdown: `leave`
 * asks it to stop once the call is recorded, so that the next owner replays the call instead of finding its
 * outcome unknown. A cancel or the time limit interrupts it at once.
 */
export interface RunControl {
  /** Learns the run's time limit once the task is read (TaskRuns enforces it). */
  readonly limit: (limit: Duration.Duration) => void
  /** Set by the run while it makes a tool call. */
  inCall: boolean
  /** Set by TaskRuns while the run makes a tool call: stop once it is recorded. */
  leave: boolean
  /**
   * Whether the task is no longer this node's to end (its shard moved, or the node stops): a run that fails
   * then (an entity call interrupted by the move, connections ended while the node was paused) leaves the
   * task to the next owner instead of ending it in error.
   */
  readonly elsewhere: () => boolean
}

/** The run stops here until a person approves or rejects a tool call. */
class Pause {
  readonly _tag = "Pause"
}

/**
 * The agent loop of one task: model call → tool calls → … → answer. Every model and tool call is
 * recorded under a step key before the loop moves on; a run resumed on another node replays recorded
 * steps from the thread instead of calling the model or the tool again.
 *
 * Each run claims its task (`TaskRepo.start`, a new epoch) and writes only while the claim holds: a node
 * that lost the task's shard without knowing it yet (paused past its lease, cut off) stops at its next
 * write, as if the move had interrupted it. Before each tool call the run marks it made under its claim;
 * a later run that finds a call marked and not recorded does not make it again (the model is told its
 * outcome is unknown), so a tool call is made at most once.
 */
/**
 * Why a budgeted model call was refused: the budget is spent, or (well before that) the call's worst case, which
 * it reserves, does not fit what the spend leaves; the latter says how to lower the worst case. (A call short only
 * of what other calls hold for the moment waits for them instead: BudgetLeases.)
 */
const budgetRefusal = (b: BudgetExhausted, worstCase: number) => {
  const left = Math.max(0, b.limit_usd - b.spent_usd)
  return b.spent_usd >= b.limit_usd
    ? `Stopped: the agent's budget of $${b.limit_usd} is exhausted ($${b.spent_usd.toFixed(6)} spent).`
    : `Stopped: the next model call may cost up to $${worstCase.toFixed(6)} (its worst case, reserved before ` +
      `it is made), more than the $${left.toFixed(6)} left of the agent's budget of $${b.limit_usd} ` +
      `($${b.spent_usd.toFixed(6)} spent): set the model's max_output_tokens to lower the worst case, or raise ` +
      "the budget."
}

export class TaskRunner extends Effect.Service<TaskRunner>()("tasks/TaskRunner", {
  effect: Effect.gen(function*() {
    const repo = yield* TaskRepo
    const gateway = yield* ModelGateway
    const connections = yield* Connections
    const leases = yield* BudgetLeases
    const config = yield* SwitchyardConfig
    const vault = yield* CredentialVault
    const local = yield* LocalTasks
    const skills = yield* Skills
    const approvals = yield* Approvals
    const completions = yield* TaskCompletions
    const builtins = yield* BuiltinTools
    const metrics = yield* NodeMetrics
    // a streamed invoke listening here hears the model's text as it comes (issue 22)
    const output = yield* TaskOutput

    // uninterruptible: TaskRuns interrupts a run whose shard moved away (or at shutdown) at any point, and
    // an interrupt landing while the ending statement is in flight left the end committed but never
    // announced (no wake of this node's long polls, no NOTIFY): its waiters slept out their whole wait
    const finish = (task: TaskRow, stop: Stop) =>
      Effect.uninterruptible(Effect.gen(function*() {
        const ended = yield* repo.finishWith(
          task.id,
          stop.status,
          stop.result,
          stop.errorCode,
          stop.modelCall,
          stop.fence
        )
        if (ended === undefined) return outcomeOf((yield* repo.findById(task.id))!)
        const outcome = outcomeOf(ended)
        completions.ended(task.id, outcome, ended.waiters)
        metrics.taskEnded?.(stop.status, (Date.now() - task.created_at.getTime()) / 1000)
        return outcome
      }))

    /** The run's tools: the agent's own skills and its attached skills as the visibility mode allows now. */
    const toolsOf = (task: TaskRow, principal: Principal, attached: ReadonlyArray<AttachedRow> | undefined) =>
      Effect.gen(function*() {
        const sources = yield* skills.toolsFor(task.agent_snapshot, attached)
        const functionIds = sources.flatMap((s) => s.target.kind === "function" ? [s.target.functionId] : [])
        const functions = yield* builtins.skillFunctions(runScopeOf(task), functionIds)
        const unusable = (source: SkillTool, what: string, why: string) =>
          new Stop(
            "error",
            `The agent's ${source.skillId === null ? "skill" : `skill ${source.skillId}, action`} ${what} ` +
              `cannot be used: ${why}`,
            "skill_unavailable"
          )
        const tools = yield* Effect.forEach(sources, (source): Effect.Effect<Tool, Stop> => {
          const target = source.target
          if (target.kind === "function") {
            const fn = functions.get(target.functionId)
            return fn === undefined
              ? Effect.fail(unusable(source, `function ${target.functionId}`, "the function no longer exists."))
              : Effect.succeed({
                spec: fn.spec,
                connectionId: null,
                operationId: null,
                fn: { id: target.functionId, call: fn.call },
                source
              })
          }
          return connections.target(principal, "_", target.connectionId, target.operationRef).pipe(
            Effect.map(({ operation }): Tool => ({
              spec: {
                name: operation.operationId,
                description: operation.pretty_description || operation.pretty_name,
                parameters: operation.input
              },
              connectionId: target.connectionId,
              operationId: operation.id,
              source
            })),
            Effect.mapError((e) =>
              unusable(source, `${target.operationRef} on connection ${target.connectionId}`, e.message)
            )
          )
        })
        // an own skill reaching what an attached skill gates behind an approval gives way to it: listing the
        // operation among the agent's own skills must not route around the approval
        const gated = tools.filter((t) => t.source.requiresApproval)
        const kept = gated.length === 0
          ? tools
          : tools.filter((t) => t.source.requiresApproval || !gated.some((g) => sameTarget(g, t)))
        // one tool per name: the agent's own skills come first, then attached skills in the order added
        return [...new Map(kept.reverse().map((t) => [t.spec.name, t])).values()].reverse()
      })

    /** Whether two tools make the same call: one connection's operation, or one function. */
    const sameTarget = (a: Tool, b: Tool) =>
      a.fn !== undefined || b.fn !== undefined
        ? a.fn?.id === b.fn?.id
        : a.connectionId === b.connectionId && a.operationId === b.operationId

    const runScopeOf = (task: TaskRow): RunScope => ({
      organizationId: task.organization_id,
      agentId: task.agent_id,
      taskId: task.id,
      user: { id: task.user_id, email: task.user_email }
    })

    /** Whether a call of the tool waits for a person: its skill asks for approval, and the condition holds. */
    const needsApproval = (tool: Tool, call: ToolCall) => {
      const { approvalCondition, requiresApproval } = tool.source
      return requiresApproval && (approvalCondition === undefined || conditionHolds(approvalCondition, call.arguments))
    }

    /** What an approval request for a call says to do now: keep waiting, make it, or not (and why). */
    const decided = (
      task: TaskRow,
      call: ToolCall,
      approval: { readonly status: string; readonly reason: string | null }
    ) =>
      Effect.gen(function*() {
        switch (approval.status) {
          case "approved":
            return "call" as const
          case "rejected":
            return {
              content: `The call to ${call.name} was rejected by a reviewer${
                approval.reason === null ? "" : `: ${approval.reason}`
              }. It was not made; do not try it again.`
            }
          case "expired":
            return new Stop(
              "error",
              `Stopped: the call to ${call.name} needed approval, and none was given within ${
                Duration.format(approvals.timeout)
              } (SWITCHYARD_APPROVAL_TIMEOUT).`,
              "approval_expired"
            )
          default:
            yield* approvals.pause(task.id)
            return new Pause()
        }
      })

    /**
     * Before a call that needs approval: ask (and pause), keep waiting, or go on as decided. A rejection
     * becomes the tool's result for the model; an expired request ends the task. A call of a tool the agent
     * no longer has (its skill taken away while the call waited) is still held to a request made for it.
     */
    const approvalGate = (task: TaskRow, tool: Tool | undefined, call: ToolCall, stepKey: string, who: unknown) =>
      Effect.gen(function*() {
        if (tool !== undefined && !needsApproval(tool, call)) return "call" as const
        const approval = yield* approvals.forStep(task.id, stepKey)
        if (approval !== undefined) return yield* decided(task, call, approval)
        if (tool === undefined) return "call" as const
        yield* approvals.request({
          organizationId: task.organization_id,
          taskId: task.id,
          stepKey,
          agentId: task.agent_id,
          skillId: tool.source.skillId,
          tool: call.name,
          connectionId: tool.connectionId,
          operationId: tool.operationId,
          functionId: tool.fn?.id,
          arguments: call.arguments,
          user: who
        })
        return new Pause()
      })

    const callTool = (
      task: TaskRow,
      principal: Principal,
      tool: Tool | undefined,
      call: ToolCall,
      names: ReadonlyArray<string>
    ) =>
      Effect.gen(function*() {
        const started = performance.now()
        if (tool === undefined) {
          // the names it may use, so that a model that misspelt one (or made one up) can correct itself
          const known = names.length === 0 ? "it has no tools" : `its tools are ${names.slice(0, 100).join(", ")}`
          return {
            outcome: "error",
            status: null,
            content: `error: there is no tool named ${call.name}; ${known}`,
            ms: 0
          }
        }
        if (tool.fn !== undefined) {
          const r = yield* tool.fn.call(call.arguments)
          return { ...r, status: null, ms: performance.now() - started }
        }
        // an object: the loop answers calls with other arguments itself (argumentsProblem)
        const args = call.arguments as InvokeOperation
        const userToken = task.oidc_token === null
          ? undefined
          : vault.open<string>(task.oidc_token, 1, [task.organization_id, task.id, "oidc"])
        return yield* connections.invoke(principal, "_", tool.connectionId as never, tool.operationId!, args, {
          taskId: task.id,
          ...(userToken === undefined ? {} : { userToken })
        }).pipe(
          Effect.flatMap((upstream) =>
            Effect.map(readBody(upstream.body), (body) => ({
              outcome: upstream.status < 400 ? "ok" : "error",
              status: upstream.status as number | null,
              content: upstream.status < 400 ? body : `HTTP ${upstream.status}: ${body}`,
              ms: performance.now() - started
            }))
          ),
          Effect.catchAll((e) =>
            Effect.succeed({
              outcome: "error",
              status: null,
              content: `error: ${e.message}`,
              ms: performance.now() - started
            })
          )
        )
      })

    const loop = (task: TaskRow, attached: Attachments | undefined, claim: Claim, control: RunControl) =>
      Effect.gen(function*() {
        const agent = task.agent_snapshot
        const principal = runPrincipal(task)
        // a resumed run replays what its thread recorded, and knows which calls were made; a first run has
        // nothing to read (read after the claim: what earlier runs wrote before it is all there)
        const fresh = claim.epoch === 1
        const [events, marked] = fresh
          ? [[], new Set<string>()]
          : yield* Effect.all([repo.events(task.id), repo.callsMarked(task.id)], { concurrency: 2 })
        const recorded = new Map(events.filter((e) => e.step_key !== null).map((e) => [e.step_key!, e.data]))
        // the calls this run's write before them marked made (the turn's record, the previous call's result)
        const premarked = new Set<string>()
        // the budget is the agent's at invocation; without one there is nothing to reserve
        const budgeted = agent.budget !== null
        const tools = yield* toolsOf(task, principal, attached?.skills)
        const byName = new Map(tools.map((t) => [t.spec.name, t]))
        const who = { id: task.user_id, email: task.user_email }
        // built-in tools (workspace files, knowledge, functions) beside the connector ones, which keep their names
        const files = yield* builtins.forRun(runScopeOf(task), new Set(byName.keys()), attached)
        const messages: Array<Message> = [{ role: "user", text: task.input }]
        /**
         * The step key of the turn's call `i` if the write before it is to mark it made: a call this run makes
         * without waiting for anyone, not recorded or marked yet. Null otherwise (a call that needs approval is
         * marked once approved, by `callStarts`).
         */
        const markable = (calls: ReadonlyArray<ToolCall>, step: number, i: number): string | null => {
          const call = calls[i]
          const key = `t:${step}:${i}`
          if (call === undefined || recorded.has(key) || marked.has(key) || argumentsProblem(call) !== undefined) {
            return null
          }
          const tool = byName.get(call.name)
          return (tool === undefined ? files.has(call.name) : !needsApproval(tool, call)) ? key : null
        }
        /** After a write of this run: false if the task is no longer its own; a mark it made is remembered. */
        const holds = (write: { readonly held: boolean; readonly marked: boolean }, mark: string | null) => {
          if (!write.held || (mark !== null && !write.marked)) return false
          if (mark !== null) premarked.add(mark)
          return true
        }
        // a budgeted call is capped at the output its reservation counts, so the reservation bounds its cost
        const outputLimit = agent.model.max_output_tokens ??
          (budgeted && agent.model.provider !== "scripted" ? BUDGETED_OUTPUT_TOKENS : undefined)
        let tokens = 0
        // the task's step events written before this step: each earlier step's model call and its tool calls
        let stepEvents = 0
        for (let step = 1; step <= agent.max_steps; step++) {
          const key = `m:${step}`
          let record: ModelCallRecord | undefined
          let turn = recorded.get(key) as {
            text: string | null
            tool_calls: Array<ToolCall>
            input_tokens: number
            output_tokens: number
            /** ModelResponse.finish; absent in threads recorded before it was kept. */
            finish?: string
          } | undefined
          if (turn === undefined) {
            const request = {
              model: agent.model.name ?? agent.model.provider,
              instructions: agent.instructions,
              messages,
              tools: [...tools.map((t) => t.spec), ...files.specs],
              ...(outputLimit === undefined ? {} : { maxOutputTokens: outputLimit }),
              ...(agent.model.temperature === undefined ? {} : { temperature: agent.model.temperature })
            }
            // the call's worst case is reserved from this node's lease of the budget, and settled once known
            const call = gateway.call(
              task.organization_id,
              agent.model,
              request,
              output.sink(task.id, step, stepEvents)
            ).pipe(
              Effect.mapError((e) =>
                new Stop(
                  "error",
                  `The model call failed (${e.code}${
                    e.status === undefined ? "" : `, HTTP ${e.status}`
                  }): ${e.message}`,
                  "model_error"
                )
              )
            )
            const worstCase = budgeted ? gateway.estimate(agent.model, request) : 0
            // the acquire is uninterruptible, so a reservation taken is always settled; reserving waits (for the
            // Agent entity, for budget that calls in flight hold) interruptibly: a cancel or the time limit stops it
            const result = yield* (!budgeted ? call : Effect.acquireUseRelease(
              leases.reserve(agent.id, worstCase).pipe(
                Effect.catchTag(
                  "BudgetExhausted",
                  (b) => Effect.fail(new Stop("error", budgetRefusal(b, worstCase), "budget_exhausted"))
                )
              ),
              () => call,
              (reserved, exit) => leases.settle(agent.id, reserved, exit._tag === "Success" ? exit.value.cost : 0)
            ))
            const { response } = result
            turn = {
              text: response.text,
              tool_calls: [...response.tool_calls],
              input_tokens: response.usage.input_tokens,
              output_tokens: response.usage.output_tokens,
              finish: response.finish
            }
            record = {
              stepKey: key,
              data: {
                step,
                provider: agent.model.provider,
                model: response.model,
                input_tokens: response.usage.input_tokens,
                output_tokens: response.usage.output_tokens,
                cached_tokens: response.usage.cached_tokens,
                ...(response.usage.estimated === true ? { usage_estimated: true } : {}),
                cost_usd: result.cost,
                duration_ms: Math.round(result.durationMs),
                finish: response.finish,
                text: response.text,
                tool_calls: response.tool_calls,
                user: who
              },
              usage: {
                taskId: task.id,
                organizationId: task.organization_id,
                agentId: agent.id,
                provider: agent.model.provider,
                model: response.model,
                input: response.usage.input_tokens,
                output: response.usage.output_tokens,
                cached: response.usage.cached_tokens,
                cost: result.cost
              }
            }
            // a turn that calls tools is recorded now, before the tools run; a last turn goes with the end
            if (turn.tool_calls.length > 0) {
              const mark = markable(turn.tool_calls, step, 0)
              // from the mark on, the run makes the call before it leaves (RunControl)
              if (mark !== null) control.inCall = true
              if (!holds(yield* repo.recordModelCall(record, claim.epoch, mark), mark)) {
                return yield* superseded(task.id)
              }
              record = undefined
            }
          }
          tokens += turn.input_tokens + turn.output_tokens
          if (agent.max_tokens !== null && tokens > agent.max_tokens) {
            return new Stop(
              "error",
              `Stopped: the task used ${tokens} tokens, over the agent's max_tokens of ${agent.max_tokens}.`,
              "max_tokens_exceeded",
              record
            )
          }
          messages.push({ role: "assistant", text: turn.text, tool_calls: turn.tool_calls })
          if (turn.tool_calls.length === 0) {
            const unanswered = turn.text === null || turn.text === "" ? noAnswer(turn.finish, outputLimit) : undefined
            // a partial answer (cut off at the output limit) is kept: the thread marks it `truncated`
            return unanswered === undefined
              ? new Stop("completed", turn.text ?? "", null, record)
              : new Stop("error", unanswered, "no_answer", record)
          }
          stepEvents += 1 + turn.tool_calls.length
          for (const [i, call] of turn.tool_calls.entries()) {
            const toolKey = `t:${step}:${i}`
            let done = recorded.get(toolKey) as { content: string } | undefined
            if (done === undefined) {
              const tool = byName.get(call.name)
              const badArguments = tool !== undefined || files.has(call.name) ? argumentsProblem(call) : undefined
              let r: { outcome: string; status: number | null; content: string; ms: number }
              if (marked.has(toolKey)) {
                // an earlier run was making this call when it stopped: it may have taken effect, so it is not made again
                r = {
                  outcome: "unknown",
                  status: null,
                  content: `The call to ${call.name} was started by an earlier run of this task, which stopped ` +
                    "before its answer was recorded: it may or may not have taken effect. It was not made again; " +
                    "check its effect before you repeat it.",
                  ms: 0
                }
              } else if (badArguments !== undefined) {
                // arguments that are no JSON object (invalid JSON, often cut off at the output limit) are not
                // filled in with {}: the call could do something else than asked (a list instead of a search)
                r = { outcome: "error", status: null, content: badArguments, ms: 0 }
              } else {
                const gate = tool === undefined && files.has(call.name)
                  ? "call"
                  : yield* approvalGate(task, tool, call, toolKey, who)
                if (gate instanceof Pause || gate instanceof Stop) return gate
                const made = gate === "call" && (tool !== undefined || files.has(call.name))
                if (made && !premarked.has(toolKey)) {
                  control.inCall = true
                  if (!(yield* repo.callStarts(task.id, claim.epoch, toolKey))) return yield* superseded(task.id)
                }
                if (gate === "call" && tool?.source.violation === true) {
                  yield* skills.recordUse({
                    organizationId: task.organization_id,
                    skillId: tool.source.skillId!,
                    agentId: agent.id,
                    taskId: task.id,
                    tool: call.name
                  })
                }
                // a rejected call is not made: the reviewer's answer is its result
                r = gate === "call" && tool === undefined && files.has(call.name)
                  ? { ...(yield* files.call(call)), status: null, ms: 0 }
                  : gate === "call"
                  ? yield* callTool(task, principal, tool, call, [...byName.keys(), ...files.specs.map((s) => s.name)])
                  : { outcome: "rejected", status: null, content: gate.content, ms: 0 }
              }
              done = { content: r.content }
              // asked to leave: this call is recorded, and the next not marked
              const next = control.leave ? null : markable(turn.tool_calls, step, i + 1)
              const written = yield* repo.appendStep(task.id, claim.epoch, "tool_call", toolKey, {
                step,
                name: call.name,
                connection_id: tool?.connectionId ?? null,
                operation_id: tool?.operationId ?? null,
                ...(tool?.fn === undefined ? {} : { function_id: tool.fn.id }),
                arguments: call.arguments,
                status: r.status,
                outcome: r.outcome,
                result: r.content.slice(0, 16 * 1024),
                content: r.content,
                duration_ms: Math.round(r.ms),
                user: who
              }, next)
              if (!holds(written, next)) return yield* superseded(task.id)
              if (next === null) {
                control.inCall = false
                if (control.leave) return yield* Effect.interrupt
              }
            }
            messages.push({ role: "tool", tool_call_id: call.id, name: call.name, content: done.content })
          }
        }
        return new Stop(
          "error",
          `Stopped after ${agent.max_steps} model call${
            agent.max_steps === 1 ? "" : "s"
          } (max_steps) without a final answer.`,
          "max_steps_exceeded"
        )
      })

    /**
     * Runs (or resumes) a task to its end; a task already ended returns its outcome. `control.limit` learns
     * the run's time limit once the task is read: the caller enforces it (TaskRuns interrupts an overdue run
     * and ends it with `timedOut`), which costs no timer per task. Untraced, like Tasks.invoke: a span per
     * task is a cost nobody reads here.
     */
    const run = Effect.fnUntraced(function*(taskId: TaskId, control: RunControl) {
      // a task invoked on this node comes as its inserted row; any other is read
      // (one run on its invoking node comes started: its insert began the thread and read the attachments)
      const handed = local.take(taskId)
      const task = handed?.row ?? (yield* repo.findById(taskId))
      if (task === undefined) {
        return {
          status: "error",
          result: "unknown task",
          error_code: "internal_error",
          finished_at: null
        } satisfies Outcome
      }
      if (task.status !== "pending" && task.status !== "executing") return outcomeOf(task)
      control.limit(limitOf(task))
      let attached = handed?.attached
      // a task inserted started here comes claimed by this run; any other run claims it now
      let claim: Claim = { epoch: task.run_epoch }
      if (attached === undefined) {
        const start = yield* repo.start(taskId, task.agent_id)
        // it ended meanwhile (a cancel before the run began)
        if (start.claim === undefined) return outcomeOf((yield* repo.findById(taskId))!)
        attached = start.attached
        claim = start.claim
      }
      const stop = yield* loop(task, attached, claim, control).pipe(
        Effect.catchIf((e): e is Stop => e instanceof Stop, Effect.succeed),
        // a failure ends the task in error instead of retrying it forever, but only a failure of the run's own,
        // while the task is this node's and under this run's claim. One of the node's (the database out of reach,
        // its connections ended by the others while it was paused, an entity call cut by a shard move) leaves the
        // task unfinished: its shard's owner resumes it (the sweep), this node or the next
        Effect.catchAllCause((cause) =>
          onRunFailure(
            cause,
            control,
            Effect.succeed(new Stop("error", RUN_FAILED, "internal_error", undefined, claim.epoch))
          )
        )
      )
      // paused for a person's decision: the task waits in the database, not in this run
      if (stop instanceof Pause) {
        return { status: "waiting_approval", result: null, error_code: null, finished_at: null } satisfies Outcome
      }
      return yield* finish(task, stop)
    })

    /** The agent's time limit for a run, else the deployment's. */
    const limitOf = (task: TaskRow) =>
      task.agent_snapshot.timeout_seconds === null
        ? Duration.decode(config.taskTimeout)
        : Duration.seconds(task.agent_snapshot.timeout_seconds)

    /** A run stopped at its time limit (TaskRuns interrupted it): it ends in error. */
    const timedOut = (taskId: TaskId, limit: Duration.Duration) =>
      failed(taskId, `Stopped: the task ran longer than ${Duration.format(limit)}.`, "timeout")

    /** After an interruption by Cancel: the thread says so. */
    const cancelled = Effect.fn("TaskRunner.cancelled")(function*(taskId: TaskId) {
      const task = yield* repo.findById(taskId)
      if (task?.status === "cancelled") {
        yield* repo.appendEvent(taskId, "cancelled", "cancelled", { message: task.result })
      }
      return task === undefined
        ? { status: "error" as const, result: null, error_code: "internal_error" as const, finished_at: null }
        : outcomeOf(task)
    })

    /** A defect in the loop ends the task in error instead of retrying it forever. */
    const failed = (taskId: TaskId, message: string, errorCode: TaskErrorCode = "internal_error") =>
      Effect.flatMap(
        repo.findById(taskId),
        (task) =>
          task === undefined
            ? Effect.succeed({ status: "error", result: message, error_code: errorCode, finished_at: null } as Outcome)
            : finish(task, new Stop("error", message, errorCode))
      )

    // one span per run while spans are exported (issue 23), the parent of the run's model and connector calls;
    // untraced otherwise, as above. Made by Spans.leanSpans: Effect.withSpan's copies of the fiber's context
    // and references were most of what tracing cost a task
    const spans = yield* leanSpansWhenTracing
    const traced = spans === undefined
      ? run
      : (taskId: TaskId, control: RunControl) =>
        spans.around("task.run", { "switchyard.task_id": taskId })(run(taskId, control))
    return { run: traced, cancelled, failed, timedOut } as const
  }),
  dependencies: [TaskOutput.Default]
}) {}
