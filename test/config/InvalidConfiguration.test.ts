/**
 * What a person sees when a setting is bad (docs/reference/configuration.md): `switchyard serve` stops at once
 * with one line naming the variable, exit 1, no stack trace, and nothing started (the data dir stays empty:
 * no embedded PostgreSQL was created). The CLI as a child process, as in test/cli.
 */
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it, vi } from "vitest"
import { BIN, cli } from "../cli/support.js"

vi.setConfig({ testTimeout: 120_000 })

const dataDirs: Array<string> = []
afterAll(() => {
  for (const dir of dataDirs) Fs.rmSync(dir, { recursive: true, force: true })
})

const serve = async (env: Record<string, string>, program?: string) => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "switchyard-config-"))
  dataDirs.push(dataDir)
  const run = await cli(["serve"], {
    env: { SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_HTTP_PORT: "0", SWITCHYARD_RUNNER_PORT: "0", ...env },
    ...(program === undefined ? {} : { program })
  })
  return { ...run, started: Fs.readdirSync(dataDir) }
}

const refused = (variable: string, problem: string) =>
  `switchyard: invalid configuration: (Invalid data at ${variable}: "${problem}")\n`

describe("serve --help", () => {
  it("lists every variable docs/reference/configuration.md documents", async () => {
    const table = Fs.readFileSync(Path.resolve(import.meta.dirname, "../../docs/reference/configuration.md"), "utf8")
    const documented = [...table.matchAll(/^\| `([A-Z][A-Z0-9_]+)`/gm)].map((m) => m[1]!)
      .filter((name) => name !== "SWITCHYARD_BUILTIN_AGENT_MODEL")
    const limits = [.../^\| `SWITCHYARD_RATE_LIMIT_<NAME>`.*Names: (.*)$/m.exec(table)![1]!.matchAll(/`([A-Z_]+)`/g)]
      .flatMap((m) => [`SWITCHYARD_RATE_LIMIT_${m[1]}`, `SWITCHYARD_RATE_LIMIT_${m[1]}_WINDOW`])
    documented.push(...limits)
    expect(limits).toHaveLength(14)
    expect(documented.length).toBeGreaterThan(85)
    const help = await cli(["serve", "--help"])
    expect(help.code).toBe(0)
    for (const name of documented) expect(help.stdout).toMatch(new RegExp(`^ {2}${name} `, "m"))
    expect(help.stdout).toMatch(/^ {2}SWITCHYARD_FUNCTION_WORKERS +integer, default \d+$/m)
    expect(help.stdout).toMatch(/^ {2}SWITCHYARD_KNOWLEDGE_WORKERS +integer, default 2$/m)
    expect(help.stdout).toMatch(/^ {2}SWITCHYARD_RATE_LIMIT_API_KEY_WINDOW +duration, default 1 minute$/m)
  })
})

describe("a bad setting stops serve before anything starts", () => {
  it("SWITCHYARD_LOG_LEVEL: named with the accepted levels, for serve and for any other command", async () => {
    const run = await serve({ SWITCHYARD_LOG_LEVEL: "chatty" })
    expect(run.stderr).toBe(
      refused("SWITCHYARD_LOG_LEVEL", `must be one of trace, debug, info, warning, error, none (not "chatty")`)
    )
    expect(run.code).toBe(1)
    expect(run.started).toEqual([])

    const client = await cli(["keys", "list"], { env: { SWITCHYARD_LOG_LEVEL: "chatty" } })
    expect(client.stderr).toBe(run.stderr)
    expect(client.code).toBe(1)
  })

  it("SWITCHYARD_MODEL_PRICES: bad JSON or a bad entry, said which (through the package bin, as a person runs it)", async () => {
    const [json, entry] = await Promise.all([
      serve({ SWITCHYARD_MODEL_PRICES: "{bad" }, BIN),
      serve({ SWITCHYARD_MODEL_PRICES: `{"my-model": {"input": 0.5}}` })
    ])
    expect(json.stderr).toBe(refused(
      "SWITCHYARD_MODEL_PRICES",
      `not JSON (Expected property name or '}' in JSON at position 1); expected JSON such as ` +
        `{"my-model": {"input": 0.5, "output": 1.5, "cached_input": 0.1}} (USD per million tokens)`
    ))
    expect(json.code).toBe(1)
    expect(json.started).toEqual([])

    expect(entry.stderr).toMatch(
      /^switchyard: invalid configuration: \(Invalid data at SWITCHYARD_MODEL_PRICES: "model "my-model": "output" is missing; /
    )
    expect(entry.stderr.split("\n")).toHaveLength(2)
    expect(entry.code).toBe(1)
    expect(entry.started).toEqual([])
  })

  it("settings once read by the services that use them, after PostgreSQL and the runner had started", async () => {
    const cases: ReadonlyArray<readonly [string, string, string]> = [
      ["SWITCHYARD_TRUST_PROXY", "yes please", `Expected a boolean value but received "yes please"`],
      [
        "SWITCHYARD_APPROVAL_TIMEOUT",
        "a day",
        `Expected a duration such as 15s, 500ms, 2m or "15 seconds" but received "a day"`
      ],
      ["SWITCHYARD_MAX_DOCUMENT_BYTES", "0", "must be a positive integer"],
      ["SWITCHYARD_KNOWLEDGE_WORKERS", "many", `Expected an integer value but received "many"`],
      ["SWITCHYARD_FUNCTION_WORKERS", "-2", "must be a positive integer"]
    ]
    // independent runs, at once
    const runs = await Promise.all(cases.map(([name, value]) => serve({ [name]: value })))
    cases.forEach(([name, , problem], i) => {
      const run = runs[i]!
      expect(run.stderr).toBe(refused(name, problem))
      expect(run.code).toBe(1)
      expect(run.started).toEqual([])
    })
  })

  it("SWITCHYARD_SOURCE_MAPS, read by the package bin before the app: true or false, empty is unset", async () => {
    // independent runs, at once
    const values = ["true", "false", ""]
    const [served, client, versions] = await Promise.all([
      Promise.all([BIN, undefined].map((program) => serve({ SWITCHYARD_SOURCE_MAPS: "yes" }, program))),
      cli(["keys", "list"], { env: { SWITCHYARD_SOURCE_MAPS: "on" } }),
      Promise.all(values.map((value) => cli(["--version"], { env: { SWITCHYARD_SOURCE_MAPS: value }, program: BIN })))
    ])
    for (const run of served) {
      expect(run.stderr).toBe(refused("SWITCHYARD_SOURCE_MAPS", `must be true or false (not "yes")`))
      expect(run.code).toBe(1)
      expect(run.started).toEqual([])
    }
    expect(client.stderr).toBe(refused("SWITCHYARD_SOURCE_MAPS", `must be true or false (not "on")`))
    expect(client.code).toBe(1)
    versions.forEach((version, i) =>
      expect({ value: values[i], code: version.code, stderr: version.stderr }).toEqual({
        value: values[i],
        code: 0,
        stderr: ""
      })
    )
  })

  it("SERVICE_SKILL_VISIBILITY_MODE: named with the accepted modes", async () => {
    const run = await serve({ SERVICE_SKILL_VISIBILITY_MODE: "loud" })
    expect(run.stderr).toBe(
      refused("SERVICE_SKILL_VISIBILITY_MODE", `Expected one of (off, report, enforce) but received "loud"`)
    )
    expect(run.code).toBe(1)
    expect(run.started).toEqual([])
  })
})

// each its own port, data dir and embedded PostgreSQL: the two run at once
describe.concurrent("a port that is taken stops serve with one line", () => {
  const taken = async (env: (port: number) => Record<string, string>) => {
    const holder = Net.createServer()
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve))
    const port = (holder.address() as Net.AddressInfo).port
    try {
      const run = await serve(env(port))
      // the node's own JSON log lines aside (the metrics listener opens after the cluster runner, which may
      // have logged by then): the failure is one plain line, no stack
      const said = run.stderr.split("\n").filter((line) => !line.startsWith("{")).join("\n")
      expect(said).toBe(
        `switchyard: cannot listen: listen EADDRINUSE: address already in use 127.0.0.1:${port} ` +
          "(check SWITCHYARD_HTTP_PORT / SWITCHYARD_RUNNER_PORT / SWITCHYARD_METRICS_PORT)\n"
      )
      expect(run.code).toBe(1)
    } finally {
      await new Promise((resolve) => holder.close(resolve))
    }
  }

  it("SWITCHYARD_RUNNER_PORT: the cluster runner's listener, said as the HTTP port's is", () =>
    taken((port) => ({ SWITCHYARD_RUNNER_PORT: String(port), SWITCHYARD_RUNNER_HOST: "127.0.0.1" })))

  it("SWITCHYARD_METRICS_PORT: the metrics listener, said as the HTTP port's is", () =>
    taken((port) => ({ SWITCHYARD_METRICS_PORT: String(port), SWITCHYARD_METRICS_HOST: "127.0.0.1" })))
})
