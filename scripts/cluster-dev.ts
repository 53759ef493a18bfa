// A local multi-node cluster for trying failover by hand: one embedded PostgreSQL, N nodes, a round-robin
// proxy. `npm run cluster:dev -- --nodes 3`, then type `kill 1`, `pause 0`, `resume 0`, `restart 1`,
// `add`, `status` or `quit`.
import { Effect, Exit, Redacted, Scope } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Readline from "node:readline"
import * as EmbeddedPostgres from "../src/db/EmbeddedPostgres.js"
import { startCluster } from "../test/support/ClusterHarness.js"
import { runCli } from "../test/support/NodeProcess.js"

const count = Number(process.argv[process.argv.indexOf("--nodes") + 1] ?? "3")
if (!Number.isInteger(count) || count < 1 || count > 9) {
  process.stderr.write("usage: npm run cluster:dev -- --nodes N   (1 to 9)\n")
  process.exit(2)
}

const dataDir = Path.resolve(".switchyard-cluster")
Fs.mkdirSync(dataDir, { recursive: true, mode: 0o711 })
const keyFile = Path.join(dataDir, "secret.key")
if (!Fs.existsSync(keyFile)) Fs.writeFileSync(keyFile, Crypto.randomBytes(32).toString("base64"), { mode: 0o600 })

const scope = Effect.runSync(Scope.make())
const pg = await Effect.runPromise(EmbeddedPostgres.make({ dataDir, port: 0 }).pipe(Scope.extend(scope)))
const env = {
  DATABASE_URL: Redacted.value(pg.url),
  SWITCHYARD_SECRET_KEY: Fs.readFileSync(keyFile, "utf8").trim(),
  SWITCHYARD_BOOTSTRAP_ON_FIRST_START: "false",
  SWITCHYARD_EGRESS_ALLOW: "127.0.0.1"
}
process.stdout.write(`starting ${count} node(s) on ${Redacted.value(pg.url).replace(/:[^:@]*@/, ":***@")} …\n`)
const cluster = await startCluster({ nodes: count, env })
const created = await runCli([
  "bootstrap",
  "--org",
  `Dev ${new Date().toISOString()}`,
  "--email",
  "dev@localhost",
  "--json"
], env)
process.stdout.write(`\nproxy   ${cluster.url}\napi key ${JSON.parse(created.stdout).api_key}\n`)

const status = () =>
  cluster.nodes.map((n) =>
    `  node ${n.index}: ${n.process.baseUrl} pid ${n.process.child.pid} ${
      n.process.child.exitCode === null && n.process.child.signalCode === null ? "up" : "down"
    }`
  ).join("\n")
process.stdout.write(`${status()}\n> `)

const shutdown = async () => {
  await cluster.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  process.exit(0)
}
process.on("SIGINT", shutdown)
process.on("SIGTERM", shutdown)

const lines = Readline.createInterface({ input: process.stdin })
lines.on("line", async (line) => {
  const [command, arg] = line.trim().split(/\s+/)
  const index = Number(arg)
  try {
    if (command === "kill") await cluster.kill(index)
    else if (command === "pause") cluster.pause(index)
    else if (command === "resume") cluster.resume(index)
    else if (command === "restart") await cluster.restart(index)
    else if (command === "add") await cluster.add()
    else if (command === "quit") return shutdown()
    else if (command !== "status" && command !== "") {
      process.stdout.write("commands: kill N, pause N, resume N, restart N, add, status, quit\n")
    }
  } catch (e) {
    process.stdout.write(`failed: ${String(e)}\n`)
  }
  process.stdout.write(`${status()}\n> `)
})
