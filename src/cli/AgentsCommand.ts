import { Args, Command, Options } from "@effect/cli"
import { Effect, Option, Schema } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import { Agent, AgentList, budgetText, CreateAgent, InvokeAgent, Task } from "../../schema/Agents.js"
import { AgentId, type TaskId } from "../../schema/Ids.js"
import { apiOptions, type ApiTarget, resolveTarget, withClient } from "./ApiTarget.js"
import { CliFailure, ExitCode } from "./CliFailure.js"
import { groupCommand, whoMayCall } from "./Help.js"
import { streamInvoke } from "./InvokeStream.js"
import { fields, note, optional, out, print, printJson, reportFailure, table, validated } from "./Output.js"
import { readStdin } from "./Stdin.js"
import { dim, sanitize, Terminal } from "./Terminal.js"

const readJsonFile = (file: string) =>
  Effect.try({
    try: () => JSON.parse(file === "-" ? Fs.readFileSync(0, "utf8") : Fs.readFileSync(file, "utf8")) as unknown,
    catch: (e: any) => CliFailure.usage(`cannot read ${file} as JSON: ${e?.message ?? e}`)
  })

/** `CONNECTION_ID:op1,op2` → an agent skill. */
const skillOf = (text: string) =>
  Effect.gen(function*() {
    const [connection, operations] = text.split(":", 2)
    if (connection === undefined || operations === undefined || operations.trim() === "") {
      return yield* CliFailure.usage(`--skill ${text}: expected CONNECTION_ID:OPERATION[,OPERATION…]`)
    }
    return { connection_id: connection.trim(), operation_ids: operations.split(",").map((o) => o.trim()) }
  })

export const agentFields = (agent: Agent) =>
  [
    ["id", agent.id],
    ["name", agent.name],
    ["model", [agent.model.provider, agent.model.name].filter(Boolean).join(" ")],
    ["skills", agent.skills.map((s) => `${s.connection_id}:${s.operation_ids.join(",")}`).join(" ")],
    ["budget", agent.budget === null ? null : budgetText(agent.budget)],
    ["spent", `$${agent.spent_usd.toFixed(4)}`],
    ["version", agent.version]
  ] as const

const create = Command.make(
  "create",
  {
    ...apiOptions,
    file: Options.text("file").pipe(
      Options.withPseudoName("FILE"),
      Options.withDescription(
        "The agent as JSON (the body of POST /v1/agents; `-`: stdin). Other options override it."
      ),
      Options.optional
    ),
    name: Options.text("name").pipe(Options.withPseudoName("NAME"), Options.optional),
    provider: Options.choice("provider", ["openai", "openai-chat", "anthropic", "scripted"]).pipe(
      Options.withDescription("The model provider (scripted: its model.script comes from --file)."),
      Options.optional
    ),
    model: Options.text("model").pipe(
      Options.withPseudoName("MODEL"),
      Options.withDescription("Model name, e.g. gpt-4.1-mini."),
      Options.optional
    ),
    baseUrl: Options.text("base-url").pipe(
      Options.withPseudoName("URL"),
      Options.withDescription(
        "The provider endpoint for this agent (default: the organization's or the deployment's)."
      ),
      Options.optional
    ),
    instructions: Options.text("instructions").pipe(Options.withPseudoName("TEXT"), Options.optional),
    skills: Options.text("skill").pipe(
      Options.withPseudoName("CONNECTION_ID:OPS"),
      Options.withDescription("CONNECTION_ID:OPERATION[,OPERATION…]: tools the agent may call (repeat for several)."),
      Options.repeated,
      Options.optional
    )
  },
  (options) =>
    Effect.gen(function*() {
      const target = yield* resolveTarget(options)
      const base: any = Option.isSome(options.file) ? yield* readJsonFile(options.file.value) : {}
      const model = {
        ...(base?.model ?? {}),
        ...optional("provider", options.provider),
        ...optional("name", options.model),
        ...optional("base_url", options.baseUrl)
      }
      // no option carries a script (a list of turns): the server's refusal would not say where to give one
      if (model.provider === "scripted" && model.script === undefined) {
        return yield* CliFailure.usage(
          "--provider scripted plays the agent's model.script, which no option gives: " +
            "use --file with an agent JSON that has model.script"
        )
      }
      const skills = yield* Effect.forEach(Option.getOrElse(options.skills, () => []), skillOf)
      const payload = yield* validated(CreateAgent, {
        ...base,
        ...optional("name", options.name),
        ...optional("instructions", options.instructions),
        model,
        ...(skills.length === 0 ? {} : { skills })
      })
      const agent = yield* withClient(target, (client) => client.agents.createAgent({ payload }))
      yield* print(options.json, Agent, agent, (agent, colour) => fields(colour, agentFields(agent)))
    }).pipe(reportFailure(options.json))
).pipe(Command.withDescription(
  `Create an agent (POST /v1/agents, ${whoMayCall("createAgent")}) from options or a JSON file.`
))

const list = Command.make("list", apiOptions, (options) =>
  Effect.gen(function*() {
    const target = yield* resolveTarget(options)
    const agents = yield* withClient(target, (client) => client.agents.listAgents({ urlParams: {} }))
    yield* print(options.json, AgentList, agents, (agents, colour) =>
      table(
        colour,
        ["ID", "NAME", "MODEL", "SKILLS", "SPENT", "VERSION"],
        agents.items.map((a) => [
          a.id,
          a.name,
          [a.model.provider, a.model.name].filter(Boolean).join(" "),
          a.skills.reduce((n, s) => n + s.operation_ids.length, 0),
          `$${a.spent_usd.toFixed(4)}`,
          a.version
        ])
      ))
  }).pipe(reportFailure(options.json))).pipe(Command.withDescription("List the agents you may use (GET /v1/agents)."))

/** The prompt from standard input; on a terminal, first said so (it would otherwise wait there silently). */
const typedOrPiped = Effect.zipRight(
  process.stdin.isTTY === true ? note("Type the prompt, then Ctrl-D on a line of its own.\n") : Effect.void,
  readStdin
)

/** The person the task is for: the options, else the caller's own user (a personal key). */
const endUser = (target: ApiTarget, email: Option.Option<string>, id: Option.Option<string>) =>
  Option.match(email, {
    onSome: (email) => Effect.succeed({ id: Option.getOrElse(id, () => email), email }),
    onNone: () =>
      withClient(target, (client) => client.identity.me()).pipe(
        Effect.flatMap((me) =>
          me.user === null
            ? Effect.fail(CliFailure.usage("an organization key has no user: pass --user EMAIL (the person asking)"))
            : Effect.succeed({ id: Option.getOrElse(id, () => me.user!.id as string), email: me.user.email })
        )
      )
  })

/**
 * A task without an answer: one that failed (exit 4), or one that has not ended (exit 5), such as the task of a
 * synchronous invoke that waits for a person to approve a tool call: what to do next, not that it "ended".
 */
const noAnswer = (task: Pick<Task, "id" | "status" | "result" | "error_code">) =>
  task.status === "error" || task.status === "cancelled"
    ? new CliFailure({
      message: `the task ended in ${task.status}${task.error_code === null ? "" : ` (${task.error_code})`}${
        task.result === null ? "" : `: ${task.result}`
      }`,
      exitCode: ExitCode.taskFailed
    })
    : new CliFailure({
      message: (task.status === "waiting_approval"
        ? `task ${task.id} waits for a person to approve a tool call (GET /v1/approvals?task_id=${task.id}); ` +
          "once it is decided"
        : `task ${task.id} is still ${task.status}; when it ends`) +
        `, \`switchyard tasks get ${task.id} --wait 60\` prints its answer`,
      exitCode: ExitCode.taskUnfinished
    })

/** The answer of a finished task for a person; a task without one is the command's failure (exit 4 or 5). */
const answer = (task: Task) =>
  Effect.gen(function*() {
    const t = yield* Terminal
    if (task.status !== "completed") return yield* noAnswer(task)
    t.out(sanitize(task.result ?? "") + "\n")
    t.err(dim(t.colourErr, `task ${task.id} completed\n`))
  })

/**
 * The task of an interrupted invoke cancelled, told on stderr (`lead`: a line break ending the text streamed so
 * far); if the cancel fails, how to follow the task.
 */
const cancelOnInterrupt = (target: ApiTarget, taskId: string, lead: string) =>
  Effect.flatMap(
    Terminal,
    (t) =>
      withClient(target, (client) => client.agents.cancelTask({ path: { task_id: taskId as TaskId } })).pipe(
        Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => CliFailure.usage("no answer in 5 s") }),
        Effect.match({
          onSuccess: (task) =>
            t.err(`${lead}interrupted: task ${taskId} ${task.status === "cancelled" ? "cancelled" : task.status}\n`),
          onFailure: (e) =>
            t.err(
              `${lead}interrupted; task ${taskId} could not be cancelled (${sanitize(e.message)}): ` +
                `\`switchyard tasks get ${taskId}\` shows it\n`
            )
        })
      )
  )

/**
 * The task of an interrupted synchronous invoke, found by its Idempotency-Key (the same key and prompt, sent
 * asynchronously, answer with the task at once) and cancelled.
 */
const cancelKeyed = (
  target: ApiTarget,
  agent_id: AgentId,
  payload: InvokeAgent,
  headers: { readonly "idempotency-key": string }
) =>
  withClient(
    target,
    (client) => client.agents.invokeAgent({ path: { agent_id }, urlParams: { asynchronous: "true" }, payload, headers })
  ).pipe(
    Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => CliFailure.usage("no answer in 5 s") }),
    Effect.matchEffect({
      onSuccess: (task) => cancelOnInterrupt(target, task.id, "\n"),
      onFailure: (e) =>
        note(
          `\ninterrupted; the task could not be found to cancel it (${sanitize(e.message)}): ` +
            `\`switchyard tasks list --agent ${agent_id}\` shows it\n`
        )
    })
  )

/** Streams the text as it comes; the whole task is read when the stream could not carry it to its end. */
const streamed = (target: ApiTarget, agentId: AgentId, body: typeof InvokeAgent.Encoded, key: Option.Option<string>) =>
  Effect.gen(function*() {
    const t = yield* Terminal
    let last = ""
    let created: string | undefined
    let lead = "\n"
    const end = yield* streamInvoke(target, agentId, body, key, {
      onText: (text) => {
        last = text
        t.out(sanitize(text))
      },
      onTask: (id) => (created = id),
      onInterruptedBeforeAnswer: () => {
        t.err("\ninterrupted: waiting for the node to name the task, to cancel it\n")
        lead = ""
      },
      onNoAnswer: () =>
        t.err(
          `interrupted: the node did not answer; \`switchyard tasks list --agent ${agentId}\` shows any task it started\n`
        )
    }).pipe(
      // Ctrl-C: the task would go on running (and spending) unseen; cancel it, and say what became of it
      Effect.onInterrupt(() => created === undefined ? Effect.void : cancelOnInterrupt(target, created, lead))
    )
    if (end.streamedText && !last.endsWith("\n")) t.out("\n")
    if (end.status === undefined || (!end.streamedText && end.resultTruncated)) {
      if (end.taskId === undefined) {
        return yield* new CliFailure({ message: "the stream ended before the task was created", exitCode: 3 })
      }
      const task = yield* withClient(
        target,
        (client) => client.agents.getTask({ path: { task_id: end.taskId as TaskId }, urlParams: { wait: 60 } })
      )
      return yield* end.streamedText && task.status === "completed" ? Effect.void : answer(task)
    }
    if (end.status !== "completed") {
      return yield* noAnswer({
        id: end.taskId as TaskId,
        status: end.status,
        result: end.result,
        error_code: end.errorCode
      })
    }
    if (!end.streamedText) t.out(sanitize(end.result ?? "") + "\n")
    t.err(dim(t.colourErr, `task ${end.taskId} completed\n`))
  })

const invoke = Command.make(
  "invoke",
  {
    ...apiOptions,
    agent: Args.text({ name: "AGENT_ID" }).pipe(Args.withDescription("The agent (see agents list).")),
    text: Args.text({ name: "TEXT" }).pipe(
      Args.withDescription("The prompt (`-` or none: standard input)."),
      Args.optional
    ),
    user: Options.text("user").pipe(
      Options.withPseudoName("EMAIL"),
      Options.withDescription("E-mail of the person asking (default: yours, for a personal key)."),
      Options.optional
    ),
    userId: Options.text("user-id").pipe(
      Options.withPseudoName("ID"),
      Options.withDescription("Their id (default: the e-mail)."),
      Options.optional
    ),
    async: Options.boolean("async").pipe(Options.withDescription("Do not wait: print the task's id (202).")),
    noStream: Options.boolean("no-stream").pipe(
      Options.withDescription("Wait for the whole answer instead of streaming the text as it comes.")
    ),
    idempotencyKey: Options.text("idempotency-key").pipe(
      Options.withPseudoName("KEY"),
      Options.withDescription("The same key and prompt return the same task."),
      Options.optional
    )
  },
  (options) =>
    Effect.gen(function*() {
      const target = yield* resolveTarget(options)
      const agent_id = yield* validated(AgentId, options.agent, "AGENT_ID")
      const text = Option.isNone(options.text) || options.text.value === "-"
        ? (yield* typedOrPiped).trim()
        : options.text.value
      const user = yield* endUser(target, options.user, options.userId)
      const payload = yield* validated(InvokeAgent, { input: { text, user } })
      const headers = Option.match(options.idempotencyKey, {
        onNone: () => ({}),
        onSome: (key) => ({ "idempotency-key": key })
      })
      if (options.async) {
        const task = yield* withClient(target, (client) =>
          client.agents.invokeAgent({ path: { agent_id }, urlParams: { asynchronous: "true" }, payload, headers }))
        return yield* options.json ? printJson(Task, task) : out(`${task.id}\n`)
      }
      if (options.json || options.noStream) {
        // keyed always: an interrupt finds the task by the key (the node goes on running a synchronous task
        // whose caller left) and cancels it
        const key = Option.getOrElse(options.idempotencyKey, () =>
          `switchyard-cli-${Crypto.randomUUID()}`)
        const keyed = { "idempotency-key": key }
        const task = yield* withClient(target, (client) =>
          client.agents.invokeAgent({ path: { agent_id }, urlParams: {}, payload, headers: keyed })).pipe(
            Effect.onInterrupt(() =>
              cancelKeyed(target, agent_id, payload, keyed)
            )
          )
        if (options.json) {
          yield* printJson(Task, task)
          return yield* task.status === "completed" ? Effect.void : noAnswer(task)
        }
        return yield* answer(task)
      }
      yield* streamed(target, agent_id, Schema.encodeSync(InvokeAgent)(payload), options.idempotencyKey)
    }).pipe(reportFailure(options.json))
).pipe(
  Command.withDescription(
    "Invoke an agent and print its answer. On a terminal or not, the text is streamed as the model writes it " +
      "(Accept: text/event-stream); --no-stream waits for the whole answer, --json prints the finished task, " +
      "--async prints the new task's id at once. Exit code 4 when the task ends in error or cancelled, 5 when " +
      "it waits for a person to approve a tool call."
  )
)

export const agentsCommand = groupCommand("agents", "Agents: create, list, invoke.", [create, list, invoke])
