import { Connection, type Outcome, requestBytes } from "./connection.js"

/**
 * Closed-loop load on keep-alive connections (see connection.ts for why not node:http's client). It
 * runs in the bench process and shares the machine's cores with the server under test: on 2 cores the
 * client caps what a very fast server (the bare baseline) can show.
 */

export interface Target {
  readonly name: string
  readonly url: string
  readonly headers?: Readonly<Record<string, string>>
  /** Default GET. */
  readonly method?: string
  /** Sent with a `content-length` (set `content-type` in `headers`). */
  readonly body?: string
}

export interface Throughput {
  readonly concurrency: number
  readonly seconds: number
  readonly requests: number
  readonly rps: number
  /** Non-2xx responses plus transport errors, counted over the measured window only. */
  readonly errors: number
  readonly statuses: Readonly<Record<string, number>>
}

export interface Latency {
  readonly requests: number
  readonly p50Ms: number
  readonly p90Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  readonly meanMs: number
  readonly errors: number
  readonly statuses: Readonly<Record<string, number>>
}

const connect = (target: Target) => {
  const url = new URL(target.url)
  const request = {
    ...(target.method === undefined ? {} : { method: target.method }),
    ...(target.body === undefined ? {} : { body: target.body })
  }
  return new Connection(url.hostname, Number(url.port || 80), requestBytes(url, target.headers ?? {}, request))
}

const tally = (statuses: Record<string, number>, outcome: Outcome) => {
  statuses[outcome.status] = (statuses[outcome.status] ?? 0) + 1
}

/** `concurrency` closed-loop workers for warm-up + duration; only completions inside the window count. */
export const measureThroughput = async (
  target: Target,
  options: { readonly concurrency: number; readonly warmupMs: number; readonly durationMs: number }
): Promise<Throughput> => {
  const connections = Array.from({ length: options.concurrency }, () => connect(target))
  const start = performance.now()
  const windowStart = start + options.warmupMs
  const windowEnd = windowStart + options.durationMs
  const statuses: Record<string, number> = {}
  let requests = 0
  let errors = 0
  const worker = async (connection: Connection) => {
    while (performance.now() < windowEnd) {
      const outcome = await connection.send()
      const now = performance.now()
      // a dead server fails at once: do not spin the CPU the other process needs
      if (outcome.status.startsWith("error:")) await new Promise((r) => setTimeout(r, 10))
      if (now < windowStart || now > windowEnd) continue
      requests++
      if (!outcome.ok) errors++
      tally(statuses, outcome)
    }
  }
  try {
    await Promise.all(connections.map(worker))
  } finally {
    for (const c of connections) c.close()
  }
  const seconds = options.durationMs / 1000
  return { concurrency: options.concurrency, seconds, requests, rps: requests / seconds, errors, statuses }
}

export const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

/**
 * One request at a time on one keep-alive socket: the server's own per-request cost, unqueued.
 * `check` may reject a 2xx response by its content (its reason is counted as the status, and as an
 * error); `maxMs` ends the measured requests early when a slow target would take longer than that.
 */
/** Latency statistics of a set of samples (milliseconds). */
export const latencyOf = (
  samples: ReadonlyArray<number>,
  statuses: Record<string, number>,
  errors: number
): Latency => {
  const sorted = [...samples].sort((a, b) => a - b)
  return {
    requests: samples.length,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.at(-1) ?? Number.NaN,
    meanMs: samples.reduce((a, b) => a + b, 0) / Math.max(1, samples.length),
    errors,
    statuses
  }
}

export const measureLatency = async (
  target: Target,
  options: {
    readonly warmup: number
    readonly requests: number
    readonly check?: (outcome: Outcome) => string | undefined
    readonly maxMs?: number
  }
): Promise<Latency> => {
  const connection = connect(target)
  const samples: Array<number> = []
  const statuses: Record<string, number> = {}
  let errors = 0
  try {
    for (let i = 0; i < options.warmup; i++) await connection.send()
    const deadline = performance.now() + (options.maxMs ?? Number.POSITIVE_INFINITY)
    for (let i = 0; i < options.requests && performance.now() < deadline; i++) {
      const t0 = process.hrtime.bigint()
      const sent = await connection.send()
      samples.push(Number(process.hrtime.bigint() - t0) / 1e6)
      const rejected = sent.ok && options.check !== undefined ? options.check(sent) : undefined
      const outcome = rejected === undefined ? sent : { status: rejected, ok: false }
      if (!outcome.ok) errors++
      tally(statuses, outcome)
    }
  } finally {
    connection.close()
  }
  return latencyOf(samples, statuses, errors)
}
