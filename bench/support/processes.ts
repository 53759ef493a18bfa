import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url))

/** Children still running and temp dirs, so a failure or Ctrl-C anywhere still cleans up. */
const live = new Set<() => Promise<void>>()
const tempDirs = new Set<string>()

/** Stops every child (each waits for its PostgreSQL), then removes the temp dirs they used. */
export const stopAll = async (): Promise<void> => {
  await Promise.allSettled([...live].map((stop) => stop()))
  for (const dir of tempDirs) Fs.rmSync(dir, { recursive: true, force: true })
  tempDirs.clear()
}

export const tempDir = (prefix: string): string => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))
  tempDirs.add(dir)
  // as root the node runs PostgreSQL as the `postgres` user, which must be able to traverse this dir
  Fs.chmodSync(dir, 0o711)
  return dir
}

/** Ports from the kernel (listen on 0, close): a tiny race with other programs, fine on a bench host. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as Net.AddressInfo
      server.close(() => resolve(address.port))
    })
  })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Resolves true when the child has exited, false after `ms`; the timer is cleared so it never holds the process. */
const exited = (child: ChildProcess, ms: number): Promise<boolean> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(true)
    : new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms)
      child.once("exit", () => {
        clearTimeout(timer)
        resolve(true)
      })
    })

const statusOf = (url: string): Promise<number> =>
  new Promise((resolve) => {
    const req = Http.get(url, { agent: false, timeout: 5000 }, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on("timeout", () => req.destroy())
    req.on("error", () => resolve(0))
  })

const isPostgres = (pid: number) => {
  try {
    return Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("postgres")
  } catch {
    return false
  }
}

/**
 * After the node exits its PostgreSQL should be gone too; if not (the node was SIGKILLed, or it exited
 * first), give it a moment, then stop it, so the data dir is not removed under a live server.
 */
const reapPostgres = async (dataDir: string) => {
  let pid: number
  try {
    pid = Number.parseInt(Fs.readFileSync(Path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0]!, 10)
  } catch {
    return
  }
  for (let i = 0; i < 50 && pid > 0 && isPostgres(pid); i++) await sleep(100)
  if (!(pid > 0) || !isPostgres(pid)) return
  process.kill(pid, "SIGINT") // PostgreSQL's "fast" shutdown
  for (let i = 0; i < 100 && isPostgres(pid); i++) await sleep(100)
  if (isPostgres(pid)) process.kill(pid, "SIGKILL")
}

export interface Bare {
  readonly baseUrl: string
  readonly pid: number
  readonly stop: () => Promise<void>
}

/**
 * Runs a helper server from bench/support (`script`, e.g. "bareServer.ts") in its own process, so it does
 * not share an event loop with the load generator; it must print `listening <port>` on stdout.
 */
export const startScript = async (
  script: string,
  env: Readonly<Record<string, string>> = {}
): Promise<Bare> => {
  const child = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "bench/support", script)], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"]
  })
  const stop = async () => {
    live.delete(stop)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    if (!(await exited(child, 5000))) child.kill("SIGKILL")
  }
  live.add(stop)
  const port = await new Promise<number>((resolve, reject) => {
    let out = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const match = /listening (\d+)/.exec(out)
      if (match) resolve(Number(match[1]))
    })
    child.once("exit", (code) => reject(new Error(`${script} exited early (code ${code})`)))
  })
  return { baseUrl: `http://127.0.0.1:${port}`, pid: child.pid!, stop }
}

/** The baseline of bench/http.ts: bare node:http answering what Switchyard's /healthz answers. */
export const startBare = (): Promise<Bare> => startScript("bareServer.ts")

/** BENCH_CPU_PROF=<dir>: the node flags that write a .cpuprofile per node process there (none when unset). */
export const cpuProfiling = () => {
  const dir = process.env["BENCH_CPU_PROF"]
  return dir === undefined || dir === ""
    ? { dir: undefined, nodeArgs: [] as Array<string> }
    : { dir: Path.resolve(dir), nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${Path.resolve(dir)}`] }
}

export interface SwitchyardNode {
  readonly baseUrl: string
  /** The node process (its embedded PostgreSQL runs as its descendants). */
  readonly pid: number
  /** Spawn to first 200 on /readyz. */
  readonly startupMs: number
  /** Only on the first start of a fresh data dir (the banner prints it once). */
  readonly apiKey: string | undefined
  /** SIGTERM and wait for exit; returns how long the graceful shutdown took. */
  readonly stop: () => Promise<number>
  /** SIGKILL, as a crash: the node gets no chance to hand anything over. */
  readonly kill: () => Promise<void>
}

const apiKeyPattern = /sy_[a-z0-9]{12}_[A-Za-z0-9_-]{43}/

export const startNode = async (options: {
  readonly dataDir: string
  readonly logLevel: "info" | "warning"
  /** Node logs (stderr) go to this file: a file sink, as in production, and readable after a failure. */
  readonly logFile: string
  readonly expectApiKey: boolean
  /** More SWITCHYARD_* settings (e.g. SWITCHYARD_EGRESS_ALLOW); the four above are set from the options. */
  readonly env?: Readonly<Record<string, string>>
  /** Node.js flags before the script, e.g. `--cpu-prof`. */
  readonly nodeArgs?: ReadonlyArray<string>
}): Promise<SwitchyardNode> => {
  const [httpPort, runnerPort] = [await freePort(), await freePort()]
  // a clean environment: an inherited DATABASE_URL or SWITCHYARD_* would change what is measured
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("SWITCHYARD_") && k !== "DATABASE_URL")
  )
  const logFd = Fs.openSync(options.logFile, "a")
  const started = performance.now()
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), "bin/switchyard.js", "serve"], {
    cwd: repoRoot,
    env: {
      ...env,
      ...options.env,
      SWITCHYARD_DATA_DIR: options.dataDir,
      SWITCHYARD_HTTP_PORT: String(httpPort),
      SWITCHYARD_RUNNER_PORT: String(runnerPort),
      SWITCHYARD_LOG_LEVEL: options.logLevel
    },
    stdio: ["ignore", "pipe", logFd]
  })
  Fs.closeSync(logFd)
  let stdout = ""
  child.stdout!.on("data", (chunk: Buffer) => {
    if (stdout.length < 64 * 1024) stdout += chunk.toString()
  })
  const stop = async (): Promise<number> => {
    live.delete(cleanup)
    const t0 = performance.now()
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    // the node drains HTTP, hands shards back, then stops PostgreSQL (default grace 20 s)
    if (!(await exited(child, 45_000))) {
      child.kill("SIGKILL")
      await exited(child, 10_000)
    }
    const elapsed = performance.now() - t0
    await reapPostgres(options.dataDir)
    return elapsed
  }
  const cleanup = async () => void (await stop())
  live.add(cleanup)

  const baseUrl = `http://127.0.0.1:${httpPort}`
  const fail = async (why: string): Promise<never> => {
    await stop()
    const log = Fs.readFileSync(options.logFile, "utf8").split("\n").slice(-15).join("\n")
    throw new Error(`Switchyard node ${why}.\n--- stdout ---\n${stdout}\n--- last log lines ---\n${log}`)
  }
  let startupMs: number | undefined
  while (startupMs === undefined) {
    if (child.exitCode !== null || child.signalCode !== null) {
      return fail(`exited during start-up (${child.exitCode ?? child.signalCode})`)
    }
    if (performance.now() - started > 120_000) return fail("was not ready within 120 s")
    if ((await statusOf(`${baseUrl}/readyz`)) === 200) startupMs = performance.now() - started
    else await sleep(50)
  }
  // the banner with the key is written as the last start-up step and can trail /readyz slightly
  for (let i = 0; options.expectApiKey && !apiKeyPattern.test(stdout) && i < 200; i++) await sleep(50)
  const apiKey = apiKeyPattern.exec(stdout)?.[0]
  if (options.expectApiKey && apiKey === undefined) return fail("printed no API key on first start")
  const kill = async () => {
    live.delete(cleanup)
    child.kill("SIGKILL")
    await exited(child, 10_000)
    await reapPostgres(options.dataDir)
  }
  return { baseUrl, pid: child.pid!, startupMs, apiKey, stop, kill }
}

/** USER_HZ: the unit of utime/stime in /proc/<pid>/stat (100 on every Linux this runs on). */
/**
 * A node's embedded PostgreSQL: pid (line 1), port (line 4) and Unix socket directory (line 5) from
 * postmaster.pid, password from pg-password. Over the socket, as the node itself connects
 * (src/db/EmbeddedPostgres.ts); over TCP a baseline was about 4% slower.
 */
export const postgresOf = (dataDir: string) => {
  const lines = Fs.readFileSync(Path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")
  return {
    pid: Number(lines[0]),
    port: Number(lines[3]),
    host: lines[4]?.trim() || "127.0.0.1",
    password: Fs.readFileSync(Path.join(dataDir, "pg-password"), "utf8").trim()
  }
}

const CLOCK_TICKS_PER_S = 100

/** utime + stime (field 14 and 15) and ppid (field 4) from /proc/<pid>/stat; comm may hold spaces. */
const procStat = (pid: string): { readonly ppid: number; readonly ticks: number } | undefined => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) }
  } catch {
    return undefined
  }
}

/**
 * CPU time (user + system, ms) used so far by these processes and all their live descendants (a node's
 * embedded PostgreSQL and its backends), or only by the processes themselves with `descendants: false`.
 * Linux only: undefined elsewhere. Resolution 10 ms.
 */
export const cpuTimeMs = (
  pids: ReadonlyArray<number>,
  options: { readonly descendants?: boolean } = {}
): number | undefined => {
  if (!Fs.existsSync("/proc/self/stat")) return undefined
  const children = new Map<number, Array<number>>()
  const ticks = new Map<number, number>()
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = procStat(entry)
    if (stat === undefined) continue
    const pid = Number(entry)
    ticks.set(pid, stat.ticks)
    const siblings = children.get(stat.ppid)
    if (siblings === undefined) children.set(stat.ppid, [pid])
    else siblings.push(pid)
  }
  let total = 0
  const seen = new Set<number>()
  const queue = [...pids]
  while (queue.length > 0) {
    const pid = queue.pop()!
    if (seen.has(pid)) continue
    seen.add(pid)
    total += ticks.get(pid) ?? 0
    if (options.descendants !== false) queue.push(...(children.get(pid) ?? []))
  }
  return (total * 1000) / CLOCK_TICKS_PER_S
}
