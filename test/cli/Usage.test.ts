/**
 * The CLI used wrongly, or pointed at the wrong server: each failure is one `error: …` line on stderr with the
 * exit code docs/reference/cli.md gives ("Output", "Exit codes"), never an internal dump; an option outside the
 * range the API takes is refused before any request; usage lines show optional options as optional. Real CLI
 * processes against a live node, and against a server that is not one.
 */
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { displayWidth } from "../../src/cli/Output.js"
import { petstore } from "../connectors/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { cli, type CliRun, configHome } from "./support.js"

vi.setConfig({ testTimeout: 300_000 })

const TASK = "00000000-0000-4000-8000-000000000000"
/** What an internal dump looks like: a schema tree, an Effect error's fields, a stack, a log line. */
const DUMP = /└─|├─|_tag|ParseError|ErrorBody|fiber|\n {4}at |level=/

let node: TestNode
let env: Record<string, string>

/** A server that is not a Switchyard node: every request gets this answer; `requests` counts them. */
interface OtherServer {
  readonly url: string
  readonly requests: () => number
  readonly close: () => Promise<void>
}
const servers: Array<OtherServer> = []
const otherServer = (status: number, contentType: string, body: string) =>
  new Promise<OtherServer>((resolve) => {
    let requests = 0
    const server = Http.createServer((_, res) => {
      requests++
      res.writeHead(status, { "content-type": contentType }).end(body)
    })
    server.listen(0, "127.0.0.1", () => {
      const other: OtherServer = {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        requests: () => requests,
        close: () => new Promise((done) => server.close(() => done()))
      }
      servers.push(other)
      resolve(other)
    })
  })

beforeAll(async () => {
  node = await startTestNode()
  const admin = (await node.bootstrap()).api_key
  env = { XDG_CONFIG_HOME: configHome(), SWITCHYARD_URL: node.baseUrl, SWITCHYARD_API_KEY: admin }
})
afterAll(async () => {
  await node?.stop()
  await Promise.all(servers.map((s) => s.close()))
})

/** One `error: …` line and nothing on stdout. */
const expectOneErrorLine = (run: CliRun, code: number, line: string | RegExp) => {
  expect(run.stdout).toBe("")
  expect(run.stderr).not.toMatch(DUMP)
  expect(run.stderr.split("\n").filter((l) => l !== "")).toHaveLength(1)
  if (typeof line === "string") expect(run.stderr).toBe(`error: ${line}\n`)
  else expect(run.stderr).toMatch(line)
  expect(run.code).toBe(code)
}

describe("an option outside the range the API takes", () => {
  it("--wait and --limit are checked against the API's ranges before any request (exit 2)", async () => {
    const document = JSON.parse(Fs.readFileSync(Path.resolve(import.meta.dirname, "../../openapi.json"), "utf8"))
    const rangeOf = (path: string, name: string) => {
      const schema = document.paths[path].get.parameters.find((p: any) => p.name === name).schema
      return `between ${schema.minimum} and ${schema.maximum}`
    }
    const wait = rangeOf("/v1/tasks/{task_id}", "wait")
    const limit = rangeOf("/v1/tools", "limit")
    expect([wait, limit]).toEqual(["between 0 and 60", "between 1 and 200"])

    // a server that counts requests: none may come
    const other = await otherServer(200, "application/json", "{}")
    const target = ["--url", other.url, "--key", "k"]
    // independent commands, run at once
    const refusals: Array<Promise<void>> = []
    for (
      const [args, message] of [
        [["tasks", "get", TASK, "--wait", "100"], `--wait must be ${wait}, not 100`],
        [["tasks", "get", TASK, "--wait", "-1"], `--wait must be ${wait}, not -1`],
        [["connectors", "list", "--limit", "0"], `--limit must be ${limit}, not 0`],
        [["connectors", "list", "--limit", "500"], `--limit must be ${limit}, not 500`]
      ] as const
    ) {
      refusals.push(cli([...args, ...target], { env }).then((run) => expectOneErrorLine(run, 2, message)))
    }
    // the bounds themselves are taken, by the node too
    const [[bound, page, help]] = await Promise.all([
      Promise.all([
        cli(["tasks", "get", TASK, "--wait", "0"], { env }),
        cli(["connectors", "list", "--limit", "200", "--json"], { env }),
        cli(["tasks", "get", "--help"], { env })
      ]),
      Promise.all(refusals)
    ])
    expect(other.requests()).toBe(0)
    expectOneErrorLine(bound, 1, /^error: Task .* not found\. \(not_found\)\n$/)
    expect(page.code).toBe(0)
    expect(JSON.parse(page.stdout).items.length).toBeGreaterThan(0)
    expect(help.stdout).toContain("(0-60)")
  })
})

describe("refusals and answers", () => {
  it("the node's 400 validation_failed prints as an API error, its message and code (exit 1)", async () => {
    const args = ["agents", "create", "--name", "x", "--provider", "openai", "--model", "m", "--base-url", "not-a-url"]
    const [human, json] = await Promise.all([cli(args, { env }), cli([...args, "--json"], { env })])
    expectOneErrorLine(human, 1, "`model.base_url`: must be an absolute http(s) URL. (validation_failed)")
    expect(json.code).toBe(1)
    expect(JSON.parse(json.stderr).error.code).toBe("validation_failed")
  })

  it("a validation_failed envelope lists each failing field under its line", async () => {
    const refusing = await otherServer(
      400,
      "application/json",
      JSON.stringify({
        error: {
          code: "validation_failed",
          message: "`x`: bad (and 1 more)",
          details: { issues: [{ path: "x", message: "bad" }, { path: "y", message: "worse" }] }
        }
      })
    )
    const run = await cli(["agents", "list", "--url", refusing.url, "--key", "k"], { env })
    expect(run.code).toBe(1)
    expect(run.stderr).toBe("error: `x`: bad (and 1 more) (validation_failed)\n  x: bad\n  y: worse\n")
  })

  it("a server that is not a Switchyard node is named in one line, no schema tree (exit 3)", async () => {
    // independent commands, run at once
    const runs: Array<Promise<void>> = []
    for (
      const [status, type, body] of [
        [404, "application/json", JSON.stringify({ message: "Not Found", statusCode: 404 })],
        [404, "text/html", "<html><body>Not here</body></html>"],
        [500, "text/plain", "upstream failed"]
      ] as const
    ) {
      const other = await otherServer(status, type, body)
      runs.push(
        cli(["agents", "list", "--url", other.url, "--key", "k"], { env }).then((run) =>
          expectOneErrorLine(run, 3, `${other.url} did not answer as a Switchyard node (HTTP ${status}); check --url`)
        )
      )
    }
    // a success status with a body the CLI cannot read: another server, or a node of another version
    for (const [type, body] of [["text/html", "<html>hello</html>"], ["application/json", "{\"items\":\"x\"}"]]) {
      const other = await otherServer(200, type, body)
      for (const args of [["agents", "list"], ["tasks", "get", TASK]]) {
        runs.push(
          cli([...args, "--url", other.url, "--key", "k"], { env }).then((run) =>
            expectOneErrorLine(
              run,
              3,
              `${other.url} did not answer as a Switchyard node of this CLI's version (HTTP 200); ` +
                "check --url and the node's version"
            )
          )
        )
      }
    }
    await Promise.all(runs)
  })
})

describe("wrong use", () => {
  it("every error line starts with `error:`: the argument parser's, a group without its command (exit 2)", async () => {
    // independent commands, run at once
    const runs: Array<Promise<void>> = []
    for (
      const [args, message] of [
        [["tasks", "get", TASK, "--wait", "abc"], "'abc' is not a integer"],
        [["keys", "create"], "Expected to find option: '--name'"],
        [["keys", "create", "--name", "k", "--bogus"], "Received unknown argument: '--bogus'"],
        [["agents", "invoke"], "Missing argument <AGENT_ID>"],
        [["keys"], "switchyard keys needs a command: create, list, revoke (see switchyard keys --help)"],
        [["audit"], "switchyard audit needs a command: verify (see switchyard audit --help)"],
        [["users"], "switchyard users needs a command: set-password (see switchyard users --help)"]
      ] as const
    ) {
      runs.push(cli([...args], { env }).then((run) => expectOneErrorLine(run, 2, message)))
    }
    runs.push(
      cli([], { env }).then((root) =>
        expectOneErrorLine(root, 2, /^error: switchyard needs a command: .*keys.* \(see switchyard --help\)\n$/)
      )
    )
    await Promise.all(runs)
  })

  it("a scripted agent without a script says to give it with --file (exit 2, before any request)", async () => {
    const run = await cli(["agents", "create", "--name", "x", "--provider", "scripted"], { env })
    expectOneErrorLine(run, 2, /^error: --provider scripted .* use --file with an agent JSON that has model\.script\n$/)
  })
})

describe("--json", () => {
  /** The one line on stderr is an error envelope with this code; stdout is empty. */
  const expectEnvelope = (run: CliRun, exit: number, code: string, message: string | RegExp) => {
    expect(run.stdout).toBe("")
    expect(run.stderr.split("\n").filter((l) => l !== "")).toHaveLength(1)
    const { error } = JSON.parse(run.stderr)
    expect(error.code).toBe(code)
    if (typeof message === "string") expect(error.message).toBe(message)
    else expect(error.message).toMatch(message)
    expect(run.code).toBe(exit)
  }

  it("every failure, the CLI's own and the argument parser's included, is one JSON envelope on stderr", async () => {
    // independent commands, run at once
    const runs: Array<Promise<void>> = []
    for (
      const [args, message] of [
        [["keys", "revoke", "nope"], /^KEY_ID: must be the id of an API key/],
        [["keys", "create", "--name", "k", "--bogus"], "Received unknown argument: '--bogus'"],
        [["agents", "invoke"], "Missing argument <AGENT_ID>"],
        [["agents", "frob"], /^Invalid subcommand for switchyard agents - use one of 'create'/],
        [["connectors", "add", "/no/such/openapi.yaml"], "cannot read /no/such/openapi.yaml: no such file"],
        [["tasks", "get", TASK, "--wait", "100"], "--wait must be between 0 and 60, not 100"]
      ] as const
    ) {
      runs.push(cli([...args, "--json"], { env }).then((run) => expectEnvelope(run, 2, "cli_usage", message)))
    }
    const [[noKey, unreachable, afterDashes]] = await Promise.all([
      Promise.all([
        cli(["keys", "list", "--json"], { env: { XDG_CONFIG_HOME: env["XDG_CONFIG_HOME"]! } }),
        cli(["agents", "list", "--json", "--url", "http://127.0.0.1:1"], { env }),
        cli(["agents", "frob", "--", "--json"], { env })
      ]),
      Promise.all(runs)
    ])
    expectEnvelope(noKey, 2, "cli_usage", /^no API key/)
    expectEnvelope(unreachable, 3, "cli_unreachable", /^cannot reach http:\/\/127\.0\.0\.1:1: /)
    // an argument `--json` after `--` is text, not the option
    expect(JSON.stringify(afterDashes.stderr)).toMatch(/^"error: /)
  })

  it("connectors add --json keeps progress off stderr: only the answer (stdout) or the envelope", async () => {
    const file = Path.join(env["XDG_CONFIG_HOME"]!, "pets.json")
    Fs.writeFileSync(file, JSON.stringify(petstore("http://127.0.0.1:9")))
    const added = await cli(["connectors", "add", file, "--name", "Quiet pets", "--json"], { env })
    expect(added.stderr).toBe("")
    expect(added.code).toBe(0)
    expect(JSON.parse(added.stdout).name).toBe("Quiet pets")
  })
})

describe("connectors add URL", () => {
  it("fetches the document from an http(s) URL with progress; an answer that is not 2xx is named (exit 2)", async () => {
    const served = await otherServer(200, "application/json", JSON.stringify(petstore("http://127.0.0.1:9")))
    const added = await cli(["connectors", "add", `${served.url}/specs/pets.json`, "--name", "Fetched pets"], { env })
    expect(added.code).toBe(0)
    expect(served.requests()).toBe(1)
    expect(added.stderr).toMatch(
      /^Downloading http:.*\/specs\/pets\.json…\n.*: done \([\d.]+ s\)\nImporting pets\.json /
    )
    expect(added.stdout).toMatch(/^name +Fetched pets$/m)

    const missing = await otherServer(404, "text/plain", "no")
    const refused = await cli(["connectors", "add", `${missing.url}/pets.json`], { env })
    expect(refused.code).toBe(2)
    expect(refused.stdout).toBe("")
    expect(refused.stderr).toContain(`error: cannot fetch ${missing.url}/pets.json: HTTP 404\n`)
  })
})

describe("tables", () => {
  it("columns stay aligned after wide (CJK, emoji) and combining characters; long ones are cut with …", async () => {
    const names = ["漢字のキー名前テスト", "🔑 deploy key", "cafe\u0301 ☕", "長".repeat(50)]
    for (const created of await Promise.all(names.map((name) => cli(["keys", "create", "--name", name], { env })))) {
      expect(created.code).toBe(0)
    }
    const listed = await cli(["keys", "list"], { env })
    expect(listed.code).toBe(0)
    const lines = listed.stdout.trimEnd().split("\n")
    // the KIND column starts at the same terminal column on every line (wide characters take two)
    const columns = lines.map((line) => displayWidth(line.slice(0, line.search(/KIND|personal|organization/))))
    expect(new Set(columns).size).toBe(1)
    expect(listed.stdout).toContain("漢字のキー名前テスト")
    expect(listed.stdout).toMatch(/長+…/)
  })
})

describe("usage lines", () => {
  it("optional options, repeatable ones included, are in brackets; a required one is not", async () => {
    const [keysHelp, agentsHelp] = await Promise.all([
      cli(["keys", "create", "--help"], { env }),
      cli(["agents", "create", "--help"], { env })
    ])
    const keys = keysHelp.stdout
    expect(keys).toMatch(/^switchyard keys create .* --name NAME .*\[--agent AGENT_ID\.\.\.\]$/m)
    const agents = agentsHelp.stdout
    expect(agents).toMatch(/^switchyard agents create .*\[--skill CONNECTION_ID:OPS\.\.\.\]$/m)

    // still repeatable, still optional
    const file = Path.join(env["XDG_CONFIG_HOME"]!, "agent.json")
    Fs.writeFileSync(file, JSON.stringify({ name: "echo", model: { provider: "scripted", script: [{ text: "hi" }] } }))
    const ids: Array<string> = []
    for (
      const created of await Promise.all(
        ["one", "two"].map((name) => cli(["agents", "create", "--file", file, "--name", name, "--json"], { env }))
      )
    ) {
      expect(created.code).toBe(0)
      ids.push(JSON.parse(created.stdout).id)
    }
    const limited = await cli(
      ["keys", "create", "--name", "k", "--kind", "organization", "--agent", ids[0]!, "--agent", ids[1]!, "--json"],
      { env }
    )
    expect(limited.code).toBe(0)
    expect([...JSON.parse(limited.stdout).agent_ids].sort()).toEqual([...ids].sort())
    const all = await cli(["keys", "create", "--name", "k2", "--kind", "organization", "--json"], { env })
    expect(JSON.parse(all.stdout).agent_ids).toBeNull()
  })

  it("the node commands name what their options take, as docs/reference/cli.md does (not `text`)", async () => {
    const help = (await cli(["--help"], { env })).stdout
    expect(help).toMatch(/^ {2}bootstrap --org NAME --email EMAIL \[--json\]$/m)
    expect(help).toMatch(/^ {2}audit verify \[--organization ID\] \[--json\]$/m)
    expect(help).toMatch(/^ {2}users set-password --email EMAIL$/m)
    // (an option without a pseudo-name shows as `--name text`)
    expect(help).not.toMatch(/ --[a-z-]+ text\b/)
  })
})
