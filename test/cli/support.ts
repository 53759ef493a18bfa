import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { buildCliBundle } from "./bundle.js"

/** The package bin (`npx switchyard`): TypeScript compiled as it loads, by tsx. */
export const BIN = Path.resolve(import.meta.dirname, "../../bin/switchyard.js")

let bundle: ReturnType<typeof buildCliBundle> | undefined

/**
 * The program the CLI steps run: the package bin compiled ahead of time (./bundle.ts), built on first use.
 * The same bin and sources at a quarter of tsx's start-up CPU, which made this file the suite's slowest.
 * Built once per run (into the directory globalSetup provides, and removes), not once per file: each build
 * is seconds of esbuild.
 * SWITCHYARD_TEST_CLI=bin runs every step through the bin itself instead.
 */
export const cliProgram = async (): Promise<string> => {
  if (process.env["SWITCHYARD_TEST_CLI"] === "bin") return BIN
  if (bundle === undefined) {
    // vitest loaded only here: scripts/cluster-dev.ts imports these helpers outside it
    const building = import("vitest").then(({ inject }) => buildCliBundle(inject("cliBundleDirectory")))
    bundle = building
    building.then(
      (built) => process.once("exit", () => built.dispose()),
      () => {
        // a failed build is tried again by the next file
        if (bundle === building) bundle = undefined
      }
    )
  }
  return (await bundle).bin
}

export interface CliRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of a CLI run: none of this process's Switchyard, colour or config-home variables leak in. */
const baseEnvironment = () =>
  Object.fromEntries(
    Object.entries(process.env).filter(([name]) =>
      !name.startsWith("SWITCHYARD_") && !["NO_COLOR", "FORCE_COLOR", "XDG_CONFIG_HOME"].includes(name)
    )
  ) as Record<string, string>

/**
 * `node bin/switchyard.js …` (compiled: `cliProgram`; `program: BIN` for the bin through tsx) as a child
 * process, stdout and stderr pipes (not a terminal).
 */
export const cli = async (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly stdin?: string; readonly program?: string } = {}
) => (await startCli(args, options)).done

/** `cli` still running: the child (to signal it) and its run once it exits. */
export const startCli = async (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly stdin?: string; readonly program?: string } = {}
) => {
  const program = options.program ?? await cliProgram()
  const child = spawn(process.execPath, [program, ...args], {
    env: { ...baseEnvironment(), SWITCHYARD_LOG_LEVEL: "warning", ...options.env },
    stdio: ["pipe", "pipe", "pipe"]
  })
  const done = new Promise<CliRun>((resolve, reject) => {
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c) => (stdout += c))
    child.stderr.on("data", (c) => (stderr += c))
    child.on("error", reject)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })
  child.stdin.end(options.stdin ?? "")
  return { child, done }
}

/**
 * The same command on a real terminal: util-linux `script` gives the child a pseudo-terminal, so
 * `process.stdout.isTTY` is true as in a person's shell. Its output (both streams) comes back as typed.
 */
export const cliOnTerminal = async (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const command = [process.execPath, await cliProgram(), ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`)
    .join(" ")
  return new Promise<CliRun>((resolve, reject) => {
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      env: { ...baseEnvironment(), SWITCHYARD_LOG_LEVEL: "warning", TERM: "xterm-256color", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    child.stdout.on("data", (c) => (stdout += c))
    child.on("error", reject)
    child.on("exit", (code) => resolve({ code, stdout, stderr: "" }))
  })
}

export const configHome = () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "switchyard-cli-"))

export const ESCAPE = "\x1b"

/**
 * `switchyard serve` (the package bin through tsx: serve loads the MCP tools as TypeScript files, which
 * only tsx can) on a pseudo-terminal until its output matches `until` (or `timeoutMs` passes); then the
 * terminal is closed (the node gets SIGHUP) and its output returned.
 */
export const serveOnTerminal = (env: Record<string, string>, until: RegExp, timeoutMs: number) =>
  new Promise<string>((resolve, reject) => {
    const command = [process.execPath, BIN, "serve"].map((a) => `'${a}'`).join(" ")
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      env: { ...baseEnvironment(), SWITCHYARD_LOG_LEVEL: "warning", TERM: "xterm-256color", ...env },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true
    })
    let output = ""
    const finish = () => {
      clearTimeout(timer)
      try {
        process.kill(-child.pid!, "SIGTERM")
      } catch {
        // already gone
      }
    }
    const timer = setTimeout(finish, timeoutMs)
    child.stdout.on("data", (c) => {
      output += c
      if (until.test(output)) finish()
    })
    child.on("error", reject)
    child.on("exit", () => resolve(output))
  })

/**
 * A real HTTP proxy on 127.0.0.1 in front of a node that holds back the answer to a streamed invoke
 * (`Accept: text/event-stream`): its body (`"body"`: the headers go on at once) or all of it (`"all"`),
 * until `release()`. `answered` resolves once the node has answered the held request. Other requests pass.
 */
export const startHoldingProxy = async (upstream: string, hold: "body" | "all") => {
  let release: () => void = () => undefined
  const released = new Promise<void>((resolve) => (release = resolve))
  let answeredNow: () => void = () => undefined
  const answered = new Promise<void>((resolve) => (answeredNow = resolve))
  const server = Http.createServer((req, res) => {
    const held = (req.headers["accept"] ?? "").includes("text/event-stream")
    const out = Http.request(new URL(req.url!, upstream), { method: req.method, headers: req.headers }, (back) => {
      const forward = () => {
        res.writeHead(back.statusCode!, back.headers)
        res.flushHeaders()
      }
      if (!held) {
        forward()
        return void back.pipe(res)
      }
      if (hold === "body") forward()
      answeredNow()
      back.pause()
      void released.then(() => {
        if (hold === "all") forward()
        back.pipe(res)
      })
    })
    out.on("error", () => res.destroy())
    res.on("close", () => out.destroy())
    req.pipe(out)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    answered,
    release: () => release(),
    close: () =>
      new Promise<void>((resolve) => {
        release()
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
