import { FastCheck as fc } from "effect"
import type { FailureKind } from "./Verdict.js"

/** A request and what came back, as printed for a counterexample (keys masked by role). */
export interface Example {
  readonly caller: string
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
  readonly status: number | string
  readonly response: string
}

/** One failure seen on one response. */
export interface Observation {
  readonly kind: FailureKind
  readonly route: string
  readonly detail: string
  /** The unusual features of the input (hostile path values, odd query values, body kind, content type). */
  readonly features: ReadonlyArray<string>
  readonly caller: string
  readonly example: Example
}

/** What the fuzz sends: an arbitrary, and how one value is sent and judged (as every caller, or one). */
export interface FuzzTarget<V> {
  readonly name: string
  readonly arbitrary: fc.Arbitrary<V>
  readonly execute: (value: V, onlyCaller?: string) => Promise<ReadonlyArray<Observation>>
  /** Counters for the summary. */
  readonly stats: () => ReadonlyArray<string>
  /**
   * Values whose answer may rightly take long (a long poll holding up to a minute): the sampling pass sends
   * them without waiting, while the next runs go on, and judges them when they answer.
   */
  readonly slow?: (value: V) => boolean
}

/** A distinct failure: kind, route and detail, and the input features of its minimal counterexample. */
export interface Finding {
  readonly kind: FailureKind
  readonly route: string
  readonly detail: string
  readonly features: ReadonlyArray<string>
  readonly callers: ReadonlyArray<string>
  readonly runs: number
  readonly example: Example
  /** Shrink steps that led to `example`; undefined when it is the first one seen (not shrunk). */
  readonly shrinks: number | undefined
  /** False when replaying the run alone, as that caller, did not fail again (state or concurrency). */
  readonly reproduced: boolean | undefined
}

export interface FuzzOptions {
  readonly seed: number
  readonly numRuns: number
  /** Total time for shrinking counterexamples (live requests), and per distinct failure. */
  readonly shrinkBudgetMs: number
  readonly shrinkPerFailureMs: number
}

export interface FuzzResult {
  readonly findings: ReadonlyArray<Finding>
  readonly runs: number
  readonly elapsedMs: number
}

const SEVERITY: ReadonlyArray<FailureKind> = [
  "hang",
  "no_answer",
  "server_error",
  "mcp_internal_error",
  "cross_organization",
  "media_type",
  "mcp_arguments",
  "wrong_route",
  "undocumented_status",
  "error_envelope",
  "response_schema"
]

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

interface Group {
  readonly first: number
  readonly observation: Observation
  readonly callers: Set<string>
  runs: number
}

type Failed = Pick<Observation, "kind" | "route" | "detail">
const sameFailure = (a: Failed, b: Failed) => a.kind === b.kind && a.route === b.route && a.detail === b.detail

const merge = (finding: { runs: number; callers: ReadonlyArray<string> }, group: Group) => {
  finding.runs += group.runs
  finding.callers = Array.from(new Set([...finding.callers, ...group.callers]))
}

/**
 * Sends `numRuns` generated values (fixed seed), collecting every failure instead of stopping at the first;
 * then shrinks one counterexample per distinct failure by replaying its run (fast-check's `path`) against
 * the live node, within the budget. Hangs are not shrunk: each attempt would wait out the timeout.
 */
export const fuzz = async <V>(target: FuzzTarget<V>, options: FuzzOptions): Promise<FuzzResult> => {
  const started = performance.now()
  const groups = new Map<string, Group>()
  const record = (index: number, observations: ReadonlyArray<Observation>) => {
    for (const o of observations) {
      const key = [o.kind, o.route, o.detail, [...o.features].sort().join(" ")].join("|")
      const seen = groups.get(key)
      // the earliest run is the group's first, also when a slow run answers after later ones
      const group = seen === undefined || index < seen.first
        ? { first: index, observation: o, callers: seen?.callers ?? new Set<string>(), runs: seen?.runs ?? 0 }
        : seen
      group.callers.add(o.caller)
      group.runs++
      groups.set(key, group)
    }
  }
  // a long poll waited out in line held every later run up to a minute (most of this fuzz's time)
  const slow: Array<Promise<unknown>> = []
  let run = 0
  await fc.assert(
    fc.asyncProperty(target.arbitrary, async (value) => {
      const index = run++
      if (target.slow?.(value) !== true) record(index, await target.execute(value))
      // settled here (not rejected unhandled while later runs go on); a failure to execute is rethrown below
      else slow.push(target.execute(value).then((o) => record(index, o), (e: unknown) => ({ failed: e })))
      return true
    }),
    { seed: options.seed, numRuns: options.numRuns }
  )
  for (const settled of await Promise.all(slow)) {
    if (settled !== undefined) throw (settled as { failed: unknown }).failed
  }

  // simplest inputs first: a failure explained by a shrunk example is not shrunk again for each variant
  const ordered = [...groups.values()].sort((a, b) =>
    SEVERITY.indexOf(a.observation.kind) - SEVERITY.indexOf(b.observation.kind) ||
    a.observation.features.length - b.observation.features.length
  )
  const findings: Array<Mutable<Finding>> = []
  const shrinkDeadline = performance.now() + options.shrinkBudgetMs
  for (const group of ordered) {
    const o = group.observation
    const explained = findings.find((f) => sameFailure(f, o) && f.features.every((x) => o.features.includes(x)))
    if (explained !== undefined) {
      merge(explained, group)
      continue
    }
    const left = shrinkDeadline - performance.now()
    const tried = o.kind !== "hang" && left > 0
    const shrunk = tried ? await shrink(target, options, group, left) : undefined
    const minimal = shrunk?.observation ?? o
    const same = findings.find((f) => sameFailure(f, o) && f.features.join(" ") === minimal.features.join(" "))
    if (same !== undefined) {
      merge(same, group)
      continue
    }
    findings.push({
      kind: o.kind,
      route: o.route,
      detail: o.detail,
      features: minimal.features,
      callers: [...group.callers],
      runs: group.runs,
      example: minimal.example,
      shrinks: shrunk?.steps,
      reproduced: tried ? shrunk !== undefined : undefined
    })
  }
  return { findings, runs: run, elapsedMs: performance.now() - started }
}

/** Replays the group's first run and shrinks it while the same failure shows, as the same caller. */
const shrink = async <V>(target: FuzzTarget<V>, options: FuzzOptions, group: Group, leftMs: number) => {
  let last: Observation | undefined
  const details = await fc.check(
    fc.asyncProperty(target.arbitrary, async (value) => {
      const seen = (await target.execute(value, group.observation.caller)).find((o) =>
        sameFailure(o, group.observation)
      )
      if (seen !== undefined) last = seen
      return seen === undefined
    }),
    {
      seed: options.seed,
      path: String(group.first),
      numRuns: 1,
      interruptAfterTimeLimit: Math.min(options.shrinkPerFailureMs, leftMs),
      markInterruptAsFailure: false
    }
  )
  return details.failed && last !== undefined ? { observation: last, steps: details.numShrinks } : undefined
}
