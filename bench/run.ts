import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { stopAll } from "./support/processes.js"

/**
 * `npm run bench [-- name...]`: runs every benchmark module in bench/ (each exports `name` and `run`),
 * one after another so they do not compete for the cores. Benchmarks only print and record results;
 * the exit code is non-zero only when one crashed or saw failed requests (its numbers are then invalid).
 */
interface Benchmark {
  readonly name: string
  readonly run: () => Promise<{ readonly ok: boolean }>
}

const benchDir = Path.dirname(fileURLToPath(import.meta.url))
const only = process.argv.slice(2)

const files = Fs.readdirSync(benchDir)
  .filter((f) => f.endsWith(".ts") && f !== "run.ts")
  .sort()

// Ctrl-C must not leave a node (and its embedded PostgreSQL) running
for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping child processes...`)
    void stopAll().finally(() => process.exit(code))
  })
}

let failures = 0
for (const file of files) {
  const bench = (await import(pathToFileURL(Path.join(benchDir, file)).href)) as Benchmark
  // scaling: root, ~20 min; fuzz: a correctness run, not a measurement; both only when named
  if (only.length > 0 ? !only.includes(bench.name) : ["scaling", "fuzz"].includes(bench.name)) continue
  console.log(`\n=== bench: ${bench.name} ===\n`)
  const started = performance.now()
  try {
    const { ok } = await bench.run()
    if (!ok) failures++
  } catch (e) {
    failures++
    console.error(`\n!!! bench ${bench.name} FAILED:`, e instanceof Error ? (e.stack ?? e.message) : e)
  }
  console.log(`\n(${bench.name}: ${((performance.now() - started) / 1000).toFixed(1)} s)`)
}

// every node stopped and the temporary data directories removed (an observability run leaves ~1.4 GB otherwise)
await stopAll()

if (failures > 0) {
  console.error(`\n!!! ${failures} benchmark(s) failed or saw request errors: see above.`)
  process.exitCode = 1
}
