import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../support/ports.js"
import { startTestNode, testEnvironment, type TestNode } from "../support/TestNode.js"
import { tourBlocks } from "./TourBlocks.js"

/**
 * The README's 5-minute tour, run as written: every `sh` block of the tour goes to bash in order, against a
 * live node and the tour's sample API, and must exit 0 with the output its `# …` lines promise. Two blocks
 * are the test's to provide, and it checks they still say what it provides:
 * - the servers block (`SWITCHYARD_EGRESS_ALLOW=… npm start`, `node docs/tour/pets.mjs`): the test starts a
 *   node in-process with the same variables, and the sample API as the tour does, on free ports;
 * - the addresses block (`export SY=… PETS=…`): the test exports its node's and sample API's addresses.
 * Everything else runs verbatim, the key included (`npx switchyard bootstrap`, against the node's database).
 */

const root = Path.resolve(import.meta.dirname, "../..")
const tour = tourBlocks(Fs.readFileSync(Path.join(root, "README.md"), "utf8"))

const SERVERS = ["SWITCHYARD_EGRESS_ALLOW=127.0.0.1 npm start", "node docs/tour/pets.mjs"]
const ADDRESSES = ["export SY=http://localhost:8080 PETS=http://127.0.0.1:4010"]

let node: TestNode | undefined
let pets: ChildProcess | undefined
let environment: Record<string, string> = {}
const stateDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "switchyard-tour-"))
const stateFile = Path.join(stateDir, "exports.sh")

const hasJq = () => spawnSync("jq", ["--version"]).status === 0

const run = (command: string, env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn("bash", ["-c", command], { cwd: root, env })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")))
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

/** Waits until the sample API answers. */
const waitFor = async (url: string) => {
  for (let i = 0; i < 100; i++) {
    if (await fetch(url).then((r) => r.ok, () => false)) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${url} did not answer`)
}

/** A `# …` line of the tour as a pattern: `…` stands for anything. */
const expectedLine = (line: string) =>
  new RegExp(`^${line.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`)

beforeAll(async () => {
  const servers = tour.find((b) => b.role === "servers")
  const addresses = tour.find((b) => b.role === "addresses")
  // the blocks the test provides must still say what it provides
  expect(servers?.lines).toEqual(SERVERS)
  expect(addresses?.lines).toEqual(ADDRESSES)
  expect(hasJq(), "the tour needs jq (apt-get install jq)").toBe(true)

  const egress = Object.fromEntries(
    SERVERS[0]!.split(" ").filter((word) => /^[A-Z_]+=/.test(word)).map((word) => word.split("=") as [string, string])
  )
  const env = await testEnvironment(egress)
  node = await startTestNode(env)
  const petsPort = String(await freePort())
  const [command, ...args] = SERVERS[1]!.split(" ")
  pets = spawn(command!, args, { cwd: root, env: { ...process.env, PORT: petsPort }, stdio: "ignore" })
  await waitFor(`http://127.0.0.1:${petsPort}/openapi.json`)

  environment = {
    PATH: process.env["PATH"] ?? "",
    HOME: process.env["HOME"] ?? Os.homedir(),
    // what the CLI of a node started with `npm start` finds by itself: the node's database and secret key
    DATABASE_URL: env.DATABASE_URL,
    SWITCHYARD_SECRET_KEY: env.SWITCHYARD_SECRET_KEY,
    SWITCHYARD_LOG_LEVEL: "warning"
  }
  Fs.writeFileSync(stateFile, `export SY=${node.baseUrl} PETS=http://127.0.0.1:${petsPort}\n`)
}, 120_000)

afterAll(async () => {
  pets?.kill("SIGTERM")
  await node?.stop()
  Fs.rmSync(stateDir, { recursive: true, force: true })
})

describe("the README's 5-minute tour", () => {
  const runnable = tour.filter((b) => b.role === "run")

  it("has runnable steps, each capturing what the next needs", () => {
    expect(runnable.length).toBeGreaterThanOrEqual(5)
    const text = runnable.map((b) => b.lines.join("\n")).join("\n")
    for (const name of ["KEY", "CONNECTOR", "CONN", "AGENT", "TASK"]) {
      expect(text).toMatch(new RegExp(`export ${name}=`))
    }
    // one set of names throughout
    expect(text).not.toMatch(/\$(URL|ADMIN_KEY)\b/)
  })

  runnable.forEach((block, i) => {
    it(`step ${i + 1} (README line ${block.line}) exits 0 with the output it shows`, async () => {
      // each block runs in the shell state the previous ones left (their exports), as in one terminal
      const script = [
        "set -euo pipefail",
        `source ${stateFile}`,
        ...block.lines,
        `export -p | grep -E '^declare -x (SY|PETS|KEY|CONNECTOR|CONN|AGENT|TASK)=' > ${stateFile}`
      ].join("\n")
      const result = await run(script, environment)
      const said = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`
      expect(result.code, said).toBe(0)
      const shown = block.lines.filter((l) => l.startsWith("# ")).map((l) => l.slice(2))
      const printed = result.stdout.split("\n").filter((l) => l.trim() !== "")
      expect(printed.length, said).toBe(shown.length)
      shown.forEach((line, j) => expect(printed[j], said).toMatch(expectedLine(line)))
      // what a step captured is a value, not jq's "null" for a refused request
      const state = Fs.readFileSync(stateFile, "utf8")
      for (const [, name, value] of state.matchAll(/^declare -x (\w+)="(.*)"$/gm)) {
        expect(value, `${name} after step ${i + 1}`).not.toMatch(/^(null)?$/)
      }
    }, 60_000)
  })
})
