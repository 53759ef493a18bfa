import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import { cliProgram } from "../cli/support.js"

const BIN = Path.resolve(import.meta.dirname, "../../bin/switchyard.js")

export interface NodeProcess {
  readonly child: ChildProcess
  readonly baseUrl: string
  readonly output: () => string
  readonly waitReady: (timeoutMs?: number) => Promise<number>
  /** SIGTERM, then wait for exit; resolves with the exit code. */
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
  readonly exited: Promise<number | null>
}

/** `switchyard serve` as a real child process (signals, crash and restart behave as in production). */
export const spawnNode = (env: Record<string, string>, args: ReadonlyArray<string> = ["serve"]): NodeProcess => {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, SWITCHYARD_LOG_LEVEL: process.env.NODE_LOG_LEVEL ?? "warning", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (c) => (output += c))
  child.stderr!.on("data", (c) => (output += c))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  const baseUrl = `http://127.0.0.1:${env["SWITCHYARD_HTTP_PORT"] ?? "8080"}`
  return {
    child,
    baseUrl,
    output: () => output,
    exited,
    waitReady: async (timeoutMs = 90_000) => {
      const started = Date.now()
      while (Date.now() - started < timeoutMs) {
        if (child.exitCode !== null) throw new Error(`node exited with ${child.exitCode}:\n${output}`)
        const ok = await fetch(`${baseUrl}/readyz`).then((r) => r.ok, () => false)
        if (ok) return Date.now() - started
        await new Promise((r) => setTimeout(r, 100))
      }
      throw new Error(`node not ready after ${timeoutMs} ms:\n${output}`)
    },
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    }
  }
}

/**
 * A one-off CLI command (bootstrap, migrate, audit verify); resolves with its exit code and output. In the
 * tests it runs the package bin compiled ahead of time (test/cli/support.ts): the same sources at a quarter
 * of the start-up CPU of tsx, which `spawnNode` keeps for the node itself.
 */
export const runCli = async (args: ReadonlyArray<string>, env: Record<string, string>) => {
  // outside the tests (scripts/cluster-dev.ts), the bin itself
  const program = process.env["VITEST"] === undefined ? BIN : await cliProgram()
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [program, ...args], {
      env: { ...process.env, SWITCHYARD_LOG_LEVEL: process.env.NODE_LOG_LEVEL ?? "warning", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c) => (stdout += c))
    child.stderr.on("data", (c) => (stderr += c))
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })
}

export const API_KEY = /sy_[a-z0-9]{12}_[A-Za-z0-9_-]{43}/
