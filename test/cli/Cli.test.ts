/**
 * The CLI for everyday work (issue 23): `node bin/switchyard.js …` as a child process against a live node, a
 * real target API for the connector and a real model server speaking the OpenAI Responses protocol. The
 * steps run the bin compiled ahead of time (./bundle.ts: tsx's start-up was most of this file's time);
 * serve and "the package bin" run it through tsx as `npx switchyard` does.
 */
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { petstore } from "../connectors/support.js"
import { type ModelServer, startModelServer } from "../support/ModelServers.js"
import { eventually } from "../support/Poll.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, testEnvironment, type TestNode } from "../support/TestNode.js"
import {
  BIN,
  cli,
  cliOnTerminal,
  cliProgram,
  configHome,
  ESCAPE,
  serveOnTerminal,
  startCli,
  startHoldingProxy
} from "./support.js"

// every step is a CLI process (half a second of CPU each, compiled; much more on a loaded machine)
vi.setConfig({ testTimeout: 300_000 })

let node: TestNode
let target: TargetServer
let model: ModelServer
let admin: string
let home: string
let env: Record<string, string>

beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
  target = await startTargetServer()
  model = await startModelServer("openai")
  admin = (await node.bootstrap()).api_key
  const set = await node.fetch("/v1/model-providers/openai", {
    method: "PUT",
    apiKey: admin,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ api_key: "sk-cli", base_url: model.url })
  })
  expect(set.status).toBe(200)
  home = configHome()
  env = { XDG_CONFIG_HOME: home }
})
afterAll(async () => {
  await node?.stop()
  await target?.close()
  await model?.close()
})

const loginFile = () => Path.join(home, "switchyard", "config.json")

describe("switchyard login", () => {
  it("checks the key against the node, then stores URL and key in a file only its owner can read (0600)", async () => {
    const wrong = await cli(["login", "--url", node.baseUrl, "--key", "sy_aaaaaaaaaaaa_" + "x".repeat(43)], { env })
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toBe("error: This API key is not valid. (invalid_api_key)\n")
    expect(Fs.existsSync(loginFile())).toBe(false)

    // the key from standard input, as a script pipes it in
    // the URL as the node's banner prints its API (…/v1/): the node's
    const ok = await cli(["login", "--url", node.baseUrl + "/v1/"], { env, stdin: admin + "\n" })
    expect(ok.stderr).toBe("")
    expect(ok.code).toBe(0)
    expect(ok.stdout).toContain(`Logged in to ${node.baseUrl} as admin-`)
    expect(Fs.statSync(loginFile()).mode & 0o777).toBe(0o600)
    expect(Fs.statSync(Path.dirname(loginFile())).mode & 0o777).toBe(0o700)
    expect(JSON.parse(Fs.readFileSync(loginFile(), "utf8"))).toEqual({ url: node.baseUrl, api_key: admin })
  })

  it("sends the stored key only to the URL it was stored for; SWITCHYARD_URL and SWITCHYARD_API_KEY override it", async () => {
    // independent commands, run at once
    const [elsewhere, overridden, unreachable] = await Promise.all([
      cli(["keys", "list"], { env: { ...env, SWITCHYARD_URL: "http://127.0.0.1:1" } }),
      cli(["keys", "list"], { env: { ...env, SWITCHYARD_API_KEY: "sy_bbbbbbbbbbbb_" + "y".repeat(43) } }),
      cli(["keys", "list", "--url", "http://127.0.0.1:1", "--key", admin], { env })
    ])
    expect(elsewhere.code).toBe(2)
    expect(elsewhere.stderr).toContain("no API key for http://127.0.0.1:1")

    expect(overridden.code).toBe(1)
    expect(overridden.stderr).toContain("(invalid_api_key)")

    expect(unreachable.code).toBe(3)
    expect(unreachable.stderr).toContain("cannot reach http://127.0.0.1:1")
  })
})

describe("switchyard keys", () => {
  it("create, list and revoke; a revoked key is refused", async () => {
    const created = await cli(["keys", "create", "--name", "ci pipeline", "--json"], { env })
    expect(created.code).toBe(0)
    const key = JSON.parse(created.stdout)
    expect(key).toMatchObject({ name: "ci pipeline", kind: "personal", revoked_at: null })
    expect(key.api_key).toMatch(/^sy_/)

    const human = await cli(["keys", "list"], { env })
    expect(human.code).toBe(0)
    expect(human.stdout.split("\n")[0]).toMatch(/^ID +NAME +KIND +ROLE/)
    expect(human.stdout).toContain("ci pipeline")

    const revoked = await cli(["keys", "revoke", key.id], { env })
    expect(revoked.code).toBe(0)
    expect(revoked.stdout).toBe(`Revoked key ${key.id} ("ci pipeline").\n`)

    const listed = JSON.parse((await cli(["keys", "list", "--json"], { env })).stdout)
    expect(listed.items.find((k: any) => k.id === key.id).revoked_at).not.toBeNull()

    const refused = await cli(["keys", "list", "--key", key.api_key, "--json"], { env })
    expect(refused.code).toBe(1)
    expect(refused.stdout).toBe("")
    expect(JSON.parse(refused.stderr).error.code).toBe("revoked_api_key")
  })
})

let connectorId: string
let connectionId: string

describe("switchyard connectors and connections", () => {
  it("connectors add uploads an OpenAPI file, shows progress and the import report; list shows it", async () => {
    const file = Path.join(home, "petstore.json")
    Fs.writeFileSync(file, JSON.stringify(petstore(target.url)))
    const added = await cli(["connectors", "add", file, "--name", "Pets"], { env })
    expect(added.code).toBe(0)
    expect(added.stderr).toMatch(
      /^Importing petstore\.json \([\d.]+ K?i?B\)…\nImporting petstore\.json \([\d.]+ K?i?B\): done \([\d.]+ s\)\n$/
    )
    expect(added.stdout).toMatch(/Import: \d+ operations? imported, \d+ skipped, (1 warning|\d+ warnings)\./)
    connectorId = /^id +(\S+)$/m.exec(added.stdout)![1]!

    const listed = await cli(["connectors", "list", "--query", "Pets", "--json"], { env })
    expect(listed.code).toBe(0)
    const page = JSON.parse(listed.stdout)
    expect(page.items.map((c: any) => c.id)).toContain(connectorId)
  })

  it("connections create takes the credential from standard input with `-`", async () => {
    const created = await cli(["connections", "create", connectorId, "--name", "pets", "--api-key", "-", "--json"], {
      env,
      stdin: "secret-k\n"
    })
    expect(created.stderr).toBe("")
    expect(created.code).toBe(0)
    const connection = JSON.parse(created.stdout)
    expect(connection).toMatchObject({ name: "pets", auth_type: "api_key", status: "active" })
    connectionId = connection.id
  })

  it("connections create --token-auth client_secret_post: the connection's token requests carry the client in the form", async () => {
    const file = Path.join(home, "machine.json")
    Fs.writeFileSync(
      file,
      JSON.stringify({
        openapi: "3.0.3",
        info: { title: "Machine API", version: "1" },
        servers: [{ url: `${target.url}/api` }],
        security: [{ oauth: [] }],
        components: {
          securitySchemes: {
            oauth: { type: "oauth2", flows: { clientCredentials: { tokenUrl: `${target.url}/token`, scopes: {} } } }
          }
        },
        paths: { "/me": { get: { operationId: "me", responses: { "200": { description: "ok" } } } } }
      })
    )
    const added = await cli(["connectors", "add", file, "--name", "Machine"], { env })
    expect(added.code, added.stderr + added.stdout).toBe(0)
    const connector = /^id +(\S+)$/m.exec(added.stdout)![1]!
    const created = await cli([
      "connections",
      "create",
      connector,
      "--name",
      "machine",
      "--client-id",
      "cli-client",
      "--client-secret",
      "-",
      "--token-auth",
      "client_secret_post",
      "--json"
    ], { env, stdin: "s3cret\n" })
    expect(created.code, created.stderr).toBe(0)
    const connection = JSON.parse(created.stdout)
    // the target answers the token request without a token (it echoes): what matters is what it was sent
    await node.fetch(`/v1/tools/connectors/${connector}/connections/${connection.id}/me`, {
      method: "POST",
      apiKey: admin,
      headers: { "content-type": "application/json" },
      body: "{}"
    })
    const token = target.requests.filter((r) => r.path === "/token").at(-1)!
    expect(token.headers.authorization).toBeUndefined()
    expect(Object.fromEntries(new URLSearchParams(token.body.toString()))).toMatchObject({
      client_id: "cli-client",
      client_secret: "s3cret"
    })
    const refused = await cli(["connections", "create", connector, "--name", "m", "--token-auth", "jwt"], { env })
    expect(refused.code).toBe(2)
  })
})

describe("switchyard agents and tasks", () => {
  let agentId: string

  it("agents create and list", async () => {
    const created = await cli([
      "agents",
      "create",
      "--name",
      "Pet helper",
      "--provider",
      "openai",
      "--model",
      "gpt-test",
      "--skill",
      `${connectionId}:getPet`,
      "--json"
    ], { env })
    expect(created.stderr).toBe("")
    const agent = JSON.parse(created.stdout)
    expect(agent).toMatchObject({ name: "Pet helper", model: { provider: "openai", name: "gpt-test" } })
    agentId = agent.id
    const listed = await cli(["agents", "list"], { env })
    expect(listed.stdout).toMatch(new RegExp(`^${agentId} +Pet helper +openai gpt-test +1 `, "m"))
  })

  it("agents invoke streams the model's text as it comes and ends with the task; tasks get and thread read it", async () => {
    model.script.push(
      { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "7" } } }] },
      { text: "Rex is a good dog who likes long walks.", frame_delay_ms: 20 }
    )
    const invoked = await cli(["agents", "invoke", agentId, "Which pet is 7?", "--user", "ada@example.com"], { env })
    expect(invoked.code).toBe(0)
    expect(invoked.stdout).toBe("Rex is a good dog who likes long walks.\n")
    const taskId = /^task (\S+) completed$/m.exec(invoked.stderr)![1]!
    // the streamed path: the model was asked to stream (only a streamed invoke does that), the connector was called
    expect(model.requests.at(-1)!.body.stream).toBe(true)
    expect(target.requests.at(-1)).toMatchObject({ method: "GET", path: "/pets/7" })
    expect(target.requests.at(-1)!.headers["x-api-key"]).toBe("secret-k")

    const task = JSON.parse((await cli(["tasks", "get", taskId, "--json"], { env })).stdout)
    expect(task).toMatchObject({ id: taskId, status: "completed", result: "Rex is a good dog who likes long walks." })

    const thread = await cli(["tasks", "thread", taskId], { env })
    expect(thread.code).toBe(0)
    const types = thread.stdout.trim().split("\n").map((line) => line.split(/ +/)[2])
    expect(types).toEqual(["user_message", "model_call", "tool_call", "model_call", "agent_message"])
    expect(thread.stdout).toMatch(/tool_call +getPet ok HTTP 200/)
    const json = JSON.parse((await cli(["tasks", "thread", taskId, "--json"], { env })).stdout)
    expect(json.events.map((e: any) => e.type)).toEqual(types)
  })

  it("Ctrl-C during a streamed invoke cancels its task, says so and exits 130", async () => {
    // the model sends its first words, then nothing more: the answer would never end
    model.script.push({ text: "Thinking about it for a very long time", mid_stream: "hang" })
    const run = await startCli(["agents", "invoke", agentId, "Think hard", "--user", "ada@example.com"], { env })
    await new Promise<void>((resolve) => run.child.stdout.on("data", () => resolve()))
    run.child.kill("SIGINT")
    const stopped = await run.done
    expect(stopped.code).toBe(130)
    expect(stopped.stdout).toMatch(/^Thinking/)
    const taskId = /^interrupted: task (\S+) cancelled$/m.exec(stopped.stderr)![1]!
    const task = JSON.parse((await cli(["tasks", "get", taskId, "--json"], { env })).stdout)
    expect(task).toMatchObject({ id: taskId, status: "cancelled" })
  })

  it("agents invoke --async prints the task id; --no-stream and --json wait for the whole answer", async () => {
    model.script.push({ text: "Later." })
    const accepted = await cli(["agents", "invoke", agentId, "hi", "--user", "ada@example.com", "--async"], { env })
    expect(accepted.code).toBe(0)
    const taskId = accepted.stdout.trim()
    expect(taskId).toMatch(/^[0-9a-f-]{36}$/)
    const waited = await cli(["tasks", "get", taskId, "--wait", "30"], { env })
    expect(waited.stdout).toMatch(/^status +completed$/m)
    expect(waited.stdout).toMatch(/\nLater\.\n$/)

    model.script.push({ text: "Whole." })
    const whole = await cli(["agents", "invoke", agentId, "--user", "ada@example.com", "--json"], {
      env,
      stdin: "from stdin\n"
    })
    const task = JSON.parse(whole.stdout)
    expect(task).toMatchObject({ status: "completed", result: "Whole." })
    expect(model.requests.at(-1)!.body.stream).not.toBe(true)
  })

  it("a task that ends in error exits 4; an API refusal prints its message and code and exits 1", async () => {
    model.script.push({ status: 400, error: "bad prompt" })
    const failed = await cli(["agents", "invoke", agentId, "hi", "--user", "ada@example.com"], { env })
    expect(failed.code).toBe(4)
    expect(failed.stderr).toContain("the task ended in error (model_error): The model call failed")

    const missing = await cli(["agents", "invoke", "00000000-0000-4000-8000-000000000000", "hi", "--user", "a@b.co"], {
      env
    })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/^error: .*not found.* \(not_found\)\n$/)
  })

  it(
    "a task that waits for approval ends agents invoke with exit 5, streamed or not; tasks thread names the decision",
    async () => {
      const call = (method: string, path: string, body?: unknown) =>
        node.fetch(path, {
          method,
          apiKey: admin,
          ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
        }).then(async (response) => ({ status: response.status, body: await response.json().catch(() => null) }))
      const skill = (await call("POST", "/v1/skills", {
        name: "Gated pet lookup",
        visibility: "organization",
        actions: [{ connection_id: connectionId, operation_id: "getPet", requires_approval: true }]
      })).body
      expect((await call("POST", `/v1/skills/${skill.id}/publish`)).status).toBe(200)
      const gated =
        (await call("POST", "/v1/agents", { name: "Gated", model: { provider: "openai", name: "gpt-test" } }))
          .body
      expect((await call("PUT", `/v1/agents/${gated.id}/skills/${skill.id}`)).status).toBe(200)
      const getPet = { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "7" } } }] }

      // streamed: the stream stays open until the decision, so the command stops at the pause as the sync invoke does
      model.script.push(getPet)
      const streamed = await cli(["agents", "invoke", gated.id, "Which pet is 7?", "--user", "ada@example.com"], {
        env
      })
      expect(streamed.code).toBe(5)
      expect(streamed.stdout).toBe("")
      const taskId = /^error: task (\S+) waits for a person to approve a tool call /.exec(streamed.stderr)![1]!
      expect(streamed.stderr).toContain(`GET /v1/approvals?task_id=${taskId}`)
      expect(streamed.stderr).toContain(`\`switchyard tasks get ${taskId} --wait 60\` prints its answer`)
      expect(streamed.stderr).not.toContain("ended")

      const pending = (await call("GET", `/v1/approvals?status=pending&task_id=${taskId}`)).body.items
      expect(pending).toHaveLength(1)
      model.script.push({ text: "Rex." })
      expect((await call("POST", `/v1/approvals/${pending[0].id}/approve`, { reason: "fine" })).status).toBe(200)
      const done = await cli(["tasks", "get", taskId, "--wait", "30"], { env })
      expect(done.stdout).toMatch(/\nRex\.\n$/)
      const thread = await cli(["tasks", "thread", taskId], { env })
      expect(thread.stdout).toMatch(/ approval_requested +getPet waits for approval \S+$/m)
      expect(thread.stdout).toMatch(/ approval_decided +approved by user [0-9a-f-]{36}: fine$/m)
      expect(thread.stdout).not.toContain("[object Object]")

      // not streamed: the synchronous invoke answers with the waiting task, which has not "ended in" anything
      model.script.push(getPet)
      const whole = await cli([
        "agents",
        "invoke",
        gated.id,
        "Which pet is 7?",
        "--user",
        "ada@example.com",
        "--no-stream"
      ], {
        env
      })
      expect(whole.code).toBe(5)
      expect(whole.stderr).toMatch(/^error: task \S+ waits for a person to approve a tool call /)
      const waiting = /^error: task (\S+) /.exec(whole.stderr)![1]!
      expect((await call("POST", `/v1/tasks/${waiting}/cancel`)).body.status).toBe("cancelled")
    },
    120_000
  )
})

describe("agents invoke typed on a terminal; Ctrl-C at any point cancels its task", () => {
  let quietAgent: string
  beforeAll(async () => {
    const created = await node.fetch("/v1/agents", {
      method: "POST",
      apiKey: admin,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Quiet", model: { provider: "openai", name: "gpt-test" } })
    })
    expect(created.status).toBe(201)
    quietAgent = (await created.json()).id
  })

  it("without TEXT on a terminal, invoke says to type the prompt and end it with Ctrl-D, then answers", async () => {
    model.script.push({ text: "Typed, and answered." })
    const args = ["agents", "invoke", quietAgent, "--user", "ada@example.com", "--url", node.baseUrl, "--key", admin]
    const command = [process.execPath, await cliProgram(), ...args].map((a) => `'${a}'`).join(" ")
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      env: { ...process.env, XDG_CONFIG_HOME: home, TERM: "xterm-256color", NO_COLOR: "1" },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let output = ""
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve))
    await new Promise<void>((resolve) => {
      child.stdout.on("data", (c) => {
        output += c
        if (output.includes("Ctrl-D")) resolve()
      })
      void exited.then(() => resolve())
    })
    expect(output).toContain("Type the prompt, then Ctrl-D on a line of its own.")
    child.stdin.write("What is typed\n\x04")
    expect(await exited).toBe(0)
    expect(output).toContain("Typed, and answered.")
    expect(JSON.stringify(model.requests.at(-1)!.body)).toContain("What is typed")
  })

  it("Ctrl-C during a synchronous invoke (--no-stream, --json) cancels its task too", async () => {
    for (const flag of ["--no-stream", "--json"]) {
      model.script.push({ hang: true })
      const args = ["agents", "invoke", quietAgent, `wait ${flag}`, "--user", "ada@example.com", flag]
      const run = await startCli([...args, "--url", node.baseUrl, "--key", admin], { env })
      // the node runs the task (and goes on, were the caller to leave without cancelling it)
      const running = await eventually(
        async () => {
          const page = await (await node.fetch(`/v1/tasks?agent_id=${quietAgent}&status=executing`, { apiKey: admin }))
            .json()
          return page.items[0]?.id as string | undefined
        },
        60_000,
        "the invoked task to run"
      )
      run.child.kill("SIGINT")
      const stopped = await run.done
      expect(stopped.code).toBe(130)
      expect(stopped.stderr).toContain(`interrupted: task ${running} cancelled\n`)
      const task = await (await node.fetch(`/v1/tasks/${running}`, { apiKey: admin })).json()
      expect(task).toMatchObject({ status: "cancelled", result: "Cancelled on request." })
    }
  })

  /**
   * An invoke of the quiet agent through a proxy holding back the node's answer (`body`: its events; `all`: all
   * of it), interrupted (SIGINT) once the node has answered the proxy.
   */
  const interruptedThroughProxy = async (hold: "body" | "all") => {
    const proxy = await startHoldingProxy(node.baseUrl, hold)
    try {
      const args = ["agents", "invoke", quietAgent, "Think hard", "--user", "ada@example.com", "--url", proxy.url]
      const run = await startCli([...args, "--key", admin], { env })
      await Promise.race([proxy.answered, run.done])
      run.child.kill("SIGINT")
      return { proxy, run }
    } catch (e) {
      await proxy.close()
      throw e
    }
  }

  /** The task the interrupted command says it cancelled is cancelled. */
  const expectCancelledTask = async (stderr: string) => {
    const taskId = /^interrupted: task (\S+) cancelled$/m.exec(stderr)![1]!
    const task = await (await node.fetch(`/v1/tasks/${taskId}`, { apiKey: admin })).json()
    expect(task).toMatchObject({ id: taskId, status: "cancelled" })
  }

  it("Ctrl-C before the stream's first event still cancels the task the invoke started", async () => {
    // the model never answers; the proxy lets the response's headers through and holds its events back
    model.script.push({ hang: true })
    const { proxy, run } = await interruptedThroughProxy("body")
    try {
      const stopped = await run.done
      expect(stopped.code).toBe(130)
      await expectCancelledTask(stopped.stderr)
    } finally {
      await proxy.close()
    }
  })

  it("Ctrl-C before the node has answered waits for the answer to name the task, then cancels it", async () => {
    model.script.push({ hang: true })
    const { proxy, run } = await interruptedThroughProxy("all")
    try {
      // the command says it waits for the node (and has stopped reading the terminal), then the answer comes
      let stderr = ""
      await new Promise<void>((resolve) => {
        run.child.stderr.on("data", (c) => {
          stderr += c
          if (stderr.includes("interrupted")) resolve()
        })
        run.child.on("exit", () => resolve())
      })
      proxy.release()
      const stopped = await run.done
      expect(stopped.code).toBe(130)
      expect(stopped.stderr).toMatch(/^interrupted: waiting for the node to name the task, to cancel it$/m)
      await expectCancelledTask(stopped.stderr)
    } finally {
      await proxy.close()
    }
  })

  it("Ctrl-C when the node never answers says so and where to look (exit 130); tasks list and cancel find it", async () => {
    model.script.push({ hang: true })
    const { proxy, run } = await interruptedThroughProxy("all")
    try {
      const stopped = await run.done
      expect(stopped.code).toBe(130)
      expect(stopped.stderr).toContain(
        "interrupted: the node did not answer; " +
          `\`switchyard tasks list --agent ${quietAgent}\` shows any task it started\n`
      )
      // the node did start it, and it runs on (the command never learnt it), as the message says: stop it here
      const direct = ["--url", node.baseUrl, "--key", admin]
      const listed = await cli(["tasks", "list", "--agent", quietAgent, "--status", "executing", ...direct], { env })
      expect(listed.code).toBe(0)
      const lines = listed.stdout.trim().split("\n")
      expect(lines[0]).toMatch(/^ID +AGENT +STATUS +SOURCE +USER +CREATED$/)
      expect(lines).toHaveLength(2)
      const taskId = lines[1]!.split(/ +/)[0]!
      expect(lines[1]!.split(/ +/).slice(1, 5)).toEqual([quietAgent, "executing", "api", "ada@example.com"])
      const cancelled = await cli(["tasks", "cancel", taskId, ...direct], { env })
      expect(cancelled).toMatchObject({ code: 0, stdout: `task ${taskId} cancelled\n` })
      const again = await cli(["tasks", "cancel", taskId, ...direct], { env })
      expect(again.code).toBe(1)
      expect(again.stderr).toMatch(/^error: .*\(task_ended\)\n$/)
    } finally {
      await proxy.close()
    }
  })
})

describe("help and output", () => {
  it("an unknown subcommand prints the friendly message only, with no internal dump (exit 2)", async () => {
    const run = await cli(["frobnicate"], { env })
    expect(run.code).toBe(2)
    expect(run.stdout).toBe("")
    expect(run.stderr).toMatch(
      /^error: Invalid subcommand for switchyard - use one of 'serve', .*'agents'.* \(see switchyard --help\)\n$/
    )
    expect(run.stderr).not.toMatch(/CommandMismatch|_tag|fiber|level=/)
  })

  it("an unknown command of a group names that group and its own commands, not the root's (exit 2)", async () => {
    // independent commands, run at once
    const runs: Array<Promise<void>> = []
    for (
      const [args, message] of [
        [
          ["keys", "frobnicate"],
          "switchyard keys - use one of 'create', 'list', 'revoke' (see switchyard keys --help)"
        ],
        [
          ["agents", "frob"],
          "switchyard agents - use one of 'create', 'list', 'invoke' (see switchyard agents --help)"
        ],
        [
          ["tasks", "frob"],
          "switchyard tasks - use one of 'list', 'get', 'thread', 'cancel' (see switchyard tasks --help)"
        ],
        [["connections", "frob"], "switchyard connections - use 'create' (see switchyard connections --help)"],
        // as the parser, not case-sensitive
        [["AGENTS", "frob"], "switchyard agents - use one of 'create', 'list', 'invoke' (see switchyard agents --help)"]
      ] as const
    ) {
      runs.push(
        cli([...args], { env }).then((run) => {
          expect(run.code).toBe(2)
          expect(run.stdout).toBe("")
          expect(run.stderr).toBe(`error: Invalid subcommand for ${message}\n`)
        })
      )
    }
    // an unknown word after a command that is no group is that command's argument, as before
    const [[extra, typo]] = await Promise.all([
      Promise.all([cli(["agents", "list", "frob"], { env }), cli(["agents", "list", "--jsn"], { env })]),
      Promise.all(runs)
    ])
    expect(extra.code).toBe(2)
    expect(extra.stderr).toBe("error: Received unknown argument: 'frob'\n")
    expect(typo.code).toBe(2)
    expect(typo.stderr).toBe("error: Received unknown argument: '--jsn'\n")
  })

  it("--version prints the package's version and nothing else", async () => {
    const run = await cli(["--version"], { env })
    expect(run.code).toBe(0)
    expect(run.stdout.trim()).toBe(
      JSON.parse(Fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version
    )
  })

  it("usage lines read `switchyard serve`; serve --help lists the port and every setting of the config module", async () => {
    const [help, nested] = await Promise.all([
      cli(["serve", "--help"], { env }),
      cli(["keys", "create", "--help"], { env })
    ])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/^USAGE\n\nswitchyard serve$/m)
    expect(help.stdout).not.toMatch(/^\$ /m)
    expect(help.stdout).toMatch(/^ {2}SWITCHYARD_HTTP_PORT +integer, default 8080$/m)
    const source = Fs.readFileSync(Path.resolve(import.meta.dirname, "../../src/config/SwitchyardConfig.ts"), "utf8")
    const names = [...source.matchAll(/(?:duration|positive|port|env)\("([A-Z_]+)"/g)].map((m) => `SWITCHYARD_${m[1]}`)
      .concat([...source.matchAll(/(?:Config|Setting)\.\w+\("((?:OTEL|DATABASE)_[A-Z_]+)"\)/g)].map((m) => m[1]!))
      .map((n) => n.replace(/^SWITCHYARD_SWITCHYARD_/, "SWITCHYARD_"))
    expect(names.length).toBeGreaterThan(40)
    for (const name of names) expect(help.stdout).toMatch(new RegExp(`^ {2}${name} `, "m"))

    expect(nested.stdout).toMatch(/^switchyard keys create \[--url URL\]/m)
    expect(nested.stdout).toMatch(/^ {2}SWITCHYARD_API_KEY +/m)
  })

  it("a malformed id argument is named with what it must be, before any request", async () => {
    const [bad, key] = await Promise.all([
      cli(["agents", "invoke", "not-an-id", "hi"], { env }),
      cli(["keys", "revoke", "ABC"], { env })
    ])
    expect(bad.code).toBe(2)
    expect(bad.stderr.trim()).toBe("error: AGENT_ID: must be the id of an agent (a UUID), not \"not-an-id\"")
    expect(key.code).toBe(2)
    expect(key.stderr).toContain("KEY_ID: must be the id of an API key")
  })

  it("a command's help names the role the API document states for its operation", async () => {
    const document = JSON.parse(Fs.readFileSync(Path.resolve(import.meta.dirname, "../../openapi.json"), "utf8"))
    const words: Record<string, string> = { builder: "Builder", admin: "Admin", super_admin: "Super admin" }
    await Promise.all(
      ([
        [["agents", "create", "--help"], "/v1/agents"],
        [["connectors", "add", "--help"], "/v1/tools/connectors"]
      ] as const).map(async ([args, path]) => {
        const role: string = document.paths[path].post["x-switchyard-role"]
        const help = await cli([...args], { env })
        expect(help.stdout.replace(/\s+/g, " ")).toContain(`POST ${path}, ${words[role]} and above)`)
      })
    )
  })

  it("no escape codes when stdout is not a terminal or NO_COLOR is set; colour on a terminal", async () => {
    // independent commands, run at once
    const [piped, table, coloured, plain, plainTable] = await Promise.all([
      cli(["--help"], { env }),
      cli(["keys", "list"], { env }),
      cliOnTerminal(["--help"], env),
      cliOnTerminal(["--help"], { ...env, NO_COLOR: "1" }),
      cliOnTerminal(["keys", "list"], { ...env, NO_COLOR: "1" })
    ])
    expect(piped.stdout).toContain("COMMANDS")
    expect(piped.stdout).not.toContain(ESCAPE)
    expect(table.stdout).not.toContain(ESCAPE)

    expect(coloured.stdout).toContain(`${ESCAPE}[`)
    expect(plain.stdout).toContain("COMMANDS")
    expect(plain.stdout).not.toContain(ESCAPE)
    expect(plainTable.stdout).toContain("ci pipeline")
    expect(plainTable.stdout).not.toContain(ESCAPE)
  })
})

describe("the package bin", () => {
  it("bin/switchyard.js through tsx, as `npx switchyard` runs, answers as the compiled program the steps use", async () => {
    // the key's last use is written at most once a minute, after the request that used it: the minute may be up
    // between the two listings below, run at once, so that time is left out of the comparison
    const lastUse = (stdout: string) => stdout.replace(/"last_used_at": "[^"]*"/g, "\"last_used_at\": \"…\"")
    // a client command (the client alone is loaded) and one that loads the node's commands too
    await Promise.all([["keys", "list", "--json"], ["frobnicate"]].map(async (args) => {
      const [viaTsx, compiled] = await Promise.all([cli(args, { env, program: BIN }), cli(args, { env })])
      expect(viaTsx.code).toBe(compiled.code)
      expect(lastUse(viaTsx.stdout)).toBe(lastUse(compiled.stdout))
      expect(viaTsx.stderr).toBe(compiled.stderr)
      if (args[0] === "keys") expect(JSON.parse(viaTsx.stdout).items.length).toBeGreaterThan(1)
    }))
  })
})

describe("progress of long steps", () => {
  it("serve on a terminal tells on stderr how its start goes, then that it is ready", async () => {
    const output = await serveOnTerminal(await testEnvironment(), /ready in [\d.]+ s/, 240_000)
    expect(output).toContain("switchyard: starting the node (DATABASE_URL)")
    expect(output).toMatch(/switchyard: ready in [\d.]+ s/)
    expect(output).toContain("Switchyard is running.")
  })
})
