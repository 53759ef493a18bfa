import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

export const BIN = Path.resolve(import.meta.dirname, "../../bin/switchyard.js")

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

/** `node bin/switchyard.js …` as a child process, stdout and stderr pipes (not a terminal). */
export const cli = (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly stdin?: string } = {}
) =>
  new Promise<CliRun>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...baseEnvironment(), SWITCHYARD_LOG_LEVEL: "warning", ...options.env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c) => (stdout += c))
    child.stderr.on("data", (c) => (stderr += c))
    child.on("error", reject)
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(options.stdin ?? "")
  })

/**
 * The same command on a real terminal: util-linux `script` gives the child a pseudo-terminal, so
 * `process.stdout.isTTY` is true as in a person's shell. Its output (both streams) comes back as typed.
 */
export const cliOnTerminal = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  new Promise<CliRun>((resolve, reject) => {
    const command = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ")
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      env: { ...baseEnvironment(), SWITCHYARD_LOG_LEVEL: "warning", TERM: "xterm-256color", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    child.stdout.on("data", (c) => (stdout += c))
    child.on("error", reject)
    child.on("exit", (code) => resolve({ code, stdout, stderr: "" }))
  })

export const configHome = () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "switchyard-cli-"))

export const ESCAPE = "\x1b"

/**
 * `switchyard serve` on a pseudo-terminal until its output matches `until` (or `timeoutMs` passes); then the
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
