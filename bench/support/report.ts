import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Latency, Throughput } from "./load.js"
import { repoRoot } from "./processes.js"

/** Printing and recording shared by the benchmarks: number formats, the results table, bench/results/<name>.json. */

/** One measured target: what `table` and `reportErrors` need of a benchmark's rows. */
export interface MeasuredRow {
  readonly label: string
  readonly throughput: Throughput
  readonly latency: Latency
}

export const fmt = (n: number, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : "n/a"

export const ratio = (a: number, b: number) => (b > 0 ? a / b : Number.NaN)

export const table = (rows: ReadonlyArray<MeasuredRow>, concurrency: number): string => {
  const header = ["target", `req/s (c=${concurrency})`, "p50 ms", "p90 ms", "p99 ms", "max ms", "errors"]
  const lines = rows.map((r) => [
    r.label,
    fmt(r.throughput.rps),
    fmt(r.latency.p50Ms, 3),
    fmt(r.latency.p90Ms, 3),
    fmt(r.latency.p99Ms, 3),
    fmt(r.latency.maxMs, 1),
    String(r.throughput.errors + r.latency.errors)
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const render = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [render(header), widths.map((w) => "-".repeat(w)).join("  "), ...lines.map(render)].join("\n")
}

export const machine = {
  node: process.version,
  platform: `${Os.platform()}-${Os.arch()}`,
  cpus: Os.cpus().length,
  cpuModel: Os.cpus()[0]?.model
}

/** Other work on the machine skews every number: says so up front; returns the 1-minute load average. */
export const warnIfBusy = (): number => {
  const load = Os.loadavg()[0]!
  if (load > 0.5) {
    console.log(`Warning: load average ${load.toFixed(2)} before the run: the machine is busy, numbers are noisy.\n`)
  }
  return load
}

/** Prints a loud line for every row that saw failed requests; returns those rows (their numbers are invalid). */
export const reportErrors = <R extends MeasuredRow>(rows: ReadonlyArray<R>): Array<R> => {
  const failed = rows.filter((r) => r.throughput.errors + r.latency.errors > 0)
  for (const r of failed) {
    console.log(
      `\n!!! ERRORS: ${r.label}: ${r.throughput.errors + r.latency.errors} failed requests ` +
        `(throughput ${JSON.stringify(r.throughput.statuses)}, latency ${JSON.stringify(r.latency.statuses)}). ` +
        `Its numbers are NOT valid.`
    )
  }
  return failed
}

/**
 * Writes bench/results/<benchmark>.json. Call it on failure too (ok: false, error), so an older file is
 * never taken for this run's results.
 */
export const writeResults = (benchmark: string, settings: unknown, json: Record<string, unknown>) => {
  const resultsDir = Path.join(repoRoot, "bench/results")
  Fs.mkdirSync(resultsDir, { recursive: true })
  const file = Path.join(resultsDir, `${benchmark}.json`)
  Fs.writeFileSync(
    file,
    JSON.stringify({ benchmark, date: new Date().toISOString(), machine, settings, ...json }, null, 2) + "\n"
  )
  console.log(`\nResults written to ${Path.relative(process.cwd(), file)}`)
}
