import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { repoRoot } from "./processes.js"
import { machine } from "./report.js"

/**
 * Results that can be reproduced: each invocation of a benchmark measures several rounds (each with its own
 * baselines, so every ratio is within one round) and appends one entry to bench/results/<benchmark>.json with
 * the machine, the commit, the settings and each figure's spread over the rounds. Earlier entries stay.
 */

export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

export const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0
    ? Number.NaN
    : s.length % 2 === 1
    ? s[(s.length - 1) / 2]!
    : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

export const spread = (xs: ReadonlyArray<number>): Spread => ({
  median: median(xs),
  min: Math.min(...xs),
  max: Math.max(...xs)
})

/** How many rounds (BENCH_RUNS, at least 3 for a result worth quoting). */
export const rounds = () => Math.max(1, Number(process.env["BENCH_RUNS"] ?? "3"))

/**
 * The commit measured: this checkout's HEAD, and whether the code under test (src, schema, cluster, bench)
 * differs from it. A copy without .git (e.g. `git archive` of a commit, to measure it apart from work in
 * progress) names it with BENCH_COMMIT.
 */
export const commitOf = (): { readonly commit: string; readonly dirty: boolean | null } => {
  try {
    const git = (...args: Array<string>) =>
      execFileSync("git", args, { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
    const commit = git("rev-parse", "HEAD")
    const dirty = git("status", "--porcelain", "--", "src", "schema", "cluster", "bench", "bin") !== ""
    return { commit, dirty }
  } catch {
    return { commit: process.env["BENCH_COMMIT"] ?? "unknown", dirty: null }
  }
}

/** Appends one invocation's entry to bench/results/<benchmark>.json (an older single-run file is kept aside). */
export const appendRun = (benchmark: string, settings: unknown, entry: Record<string, unknown>) => {
  const dir = Path.join(repoRoot, "bench/results")
  Fs.mkdirSync(dir, { recursive: true })
  const file = Path.join(dir, `${benchmark}.json`)
  let previous: { benchmark: string; runs: Array<unknown> } = { benchmark, runs: [] }
  if (Fs.existsSync(file)) {
    const parsed = JSON.parse(Fs.readFileSync(file, "utf8"))
    if (Array.isArray(parsed?.runs)) previous = parsed
    else previous.runs.push(parsed)
  }
  previous.runs.push({ date: new Date().toISOString(), machine, ...commitOf(), settings, ...entry })
  Fs.writeFileSync(file, JSON.stringify(previous, null, 2) + "\n")
  console.log(`\nResults appended to ${Path.relative(process.cwd(), file)} (entry ${previous.runs.length})`)
}

/**
 * Appends one entry to bench/results/<benchmark>.json kept as a plain list (the events, webhooks, usage and
 * files benchmarks' format): the entry with its benchmark, date, machine, commit and settings.
 */
export const appendToList = (benchmark: string, settings: unknown, run: Record<string, unknown>) => {
  const file = Path.join(repoRoot, `bench/results/${benchmark}.json`)
  const runs = Fs.existsSync(file) ? (JSON.parse(Fs.readFileSync(file, "utf8")) as Array<unknown>) : []
  runs.push({ benchmark, date: new Date().toISOString(), machine, ...commitOf(), settings, ...run })
  Fs.writeFileSync(file, JSON.stringify(runs, null, 2) + "\n")
  console.log(`\nResults appended to ${Path.relative(process.cwd(), file)}`)
}

export const fmtSpread = (s: Spread, digits: number) =>
  `${s.median.toFixed(digits)} [${s.min.toFixed(digits)}–${s.max.toFixed(digits)}]`
