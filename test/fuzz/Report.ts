import type { Finding, FuzzOptions, FuzzResult, FuzzTarget } from "./FuzzRun.js"

/** Long runs of text (huge strings, deep nesting) shortened so a counterexample stays readable. */
export const abbreviate = (text: string, max = 600): string => {
  const squeezed = text.replace(/(.)\1{39,}/gs, (run, c: string) => `${c.repeat(8)}…(${c} × ${run.length})…`)
  return squeezed.length <= max ? squeezed : `${squeezed.slice(0, max)}…(${squeezed.length} chars)`
}

/** Where a failure's title reads the same for each run: route, what failed, and on which input. */
export const titleOf = (f: Finding) =>
  `[${f.kind}] ${f.route} → ${f.detail}${f.features.length > 0 ? `  (input: ${f.features.join(", ")})` : ""}`

const exampleOf = (f: Finding) => {
  const e = f.example
  const headers = Object.entries(e.headers).map(([k, v]) => `${k}: ${v}`).join("; ") || "(none)"
  return [
    `    ${e.method} ${abbreviate(e.path, 300)}    as ${e.caller}`,
    `    headers: ${headers}`,
    `    body: ${e.body === undefined ? "(none)" : abbreviate(JSON.stringify(e.body))}`,
    `    → ${e.status} ${abbreviate(e.response)}`
  ].join("\n")
}

/** The summary a test failure or the bench prints: counts, then each distinct failure with its example. */
export const report = <V>(target: FuzzTarget<V>, options: FuzzOptions, result: FuzzResult): string => {
  const head = [
    `${target.name} fuzz: ${result.runs} runs, seed ${options.seed}, ${(result.elapsedMs / 1000).toFixed(1)} s`,
    ...target.stats().map((s) => `  ${s}`),
    result.findings.length === 0
      ? "  no failures"
      : `  ${result.findings.length} distinct failure(s); replay with FUZZ_SEED=${options.seed} FUZZ_RUNS=${options.numRuns}`
  ]
  const body = result.findings.map((f, i) =>
    [
      `\n${i + 1}. ${titleOf(f)}`,
      `   seen ${f.runs}× as ${f.callers.join(", ")}; ${
        f.reproduced === false
          ? "first counterexample; it did not fail again when replayed alone as that caller (state or concurrency)"
          : f.shrinks === undefined
          ? "first counterexample (not shrunk)"
          : `minimal counterexample (${f.shrinks} shrinks)`
      }:`,
      exampleOf(f)
    ].join("\n")
  )
  return [...head, ...body].join("\n")
}
