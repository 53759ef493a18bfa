import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { Connection, type Outcome, requestBytes, responseBody } from "./support/connection.js"
import { type Latency, latencyOf, type Target } from "./support/load.js"
import { cpuProfiling, cpuTimeMs, startNode, stopAll, type SwitchyardNode, tempDir } from "./support/processes.js"
import { fmt, ratio, warnIfBusy } from "./support/report.js"
import { appendRun, fmtSpread, median, rounds, spread } from "./support/runs.js"

/**
 * 1,000 concurrent SSE clients on one node (issue 22): what they cost the node in memory, and what they do
 * to the other endpoints' latency. Each round, on one node:
 *   - without streams: p50/p99 of `GET /v1/me` and of a sync invoke (scripted model), each from
 *     `concurrency` closed-loop clients for `measureMs`, first with nothing else running, then while a
 *     producer makes events (async invokes of a scripted agent at `producerPerSecond`, each task writing
 *     ~4 task.* events); the node's RSS (VmRSS) at rest afterwards;
 *   - `streams` clients open `GET /v1/events` (node:http, `agent: false`: one socket each, in a child
 *     process of their own so that reading them does not delay the latency clients), all resuming
 *     after the same event id (Last-Event-ID), each reading and counting what it receives; the node's RSS
 *     at rest again: (with − without) / streams is the memory per open stream;
 *   - with streams: the same two latency measurements (the sync invokes' own events fan out to every
 *     stream too), and the events delivered per second across the streams;
 *   - the producer stops; once the log is quiet every stream must have seen exactly the events a reference
 *     stream (opened first, same position) saw: same count, same last id, ids increasing (fan-out
 *     correctness); then the streams close.
 *   - what a stream's events wait: from a task.created event's transaction start (its `at`) to a client, p50/p99,
 *     while the producer runs, with the reference stream alone (before the others open: the same round's
 *     baseline), then on every SAMPLE_EVERY-th of the other streams with all of them open (a busy tail is
 *     read less often: EventTails.ts).
 * Ratios are within a round (same minute of this shared machine); the figures are their median over the
 * rounds (BENCH_RUNS, default 3). Each run is appended to bench/results/sse.json.
 *
 * BENCH_CPU_PROF=<dir> starts the node with `--cpu-prof --cpu-prof-dir=<dir>` (its .cpuprofile is written at
 * its exit) and prints each measurement's window; read it with bench/support/cpuProfile.ts --from/--to.
 * Besides the ratios, each phase reports the node's CPU per event delivered to one stream (µs): what a
 * stream costs per wake, less noisy than latency on a shared machine.
 */
export const name = "sse"

const settings = {
  /** BENCH_SSE_STREAMS overrides it (a quick check). */
  streams: Number(process.env["BENCH_SSE_STREAMS"] ?? "1000"),
  /** Async invokes per second while measuring: each task writes task.created, started, model_call, completed. */
  producerPerSecond: 50,
  /** `types` of the streams ("" = every event of the organization). */
  streamTypes: "",
  concurrency: 4,
  warmupMs: 1000,
  measureMs: 5000,
  /** Opening streams this many at a time. */
  openBatch: 50,
  /** After the streams are open, before measuring: their catch-up reads are done. */
  settleMs: 2000
} as const

/** Informational target, printed as PASS/MISS: p99 with streams over p99 without, each endpoint. */
const targets = { p99WithVsWithout: 1.2 } as const

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** VmRSS of a process, in MiB (Linux). */
const rssMiB = (pid: number): number => {
  const status = Fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status)
  return kb === null ? Number.NaN : Number(kb[1]) / 1024
}

/** Samples the node's RSS every 250 ms until stopped: the samples' median. */
const sampleRss = (pid: number) => {
  const samples: Array<number> = [rssMiB(pid)]
  const timer = setInterval(() => samples.push(rssMiB(pid)), 250)
  return () => {
    clearInterval(timer)
    samples.push(rssMiB(pid))
    return { median: median(samples), max: Math.max(...samples) }
  }
}

const connect = (target: Target) => {
  const url = new URL(target.url)
  return new Connection(
    url.hostname,
    Number(url.port),
    requestBytes(url, target.headers ?? {}, {
      ...(target.method === undefined ? {} : { method: target.method }),
      ...(target.body === undefined ? {} : { body: target.body })
    })
  )
}

/**
 * `concurrency` closed-loop clients for warm-up + `measureMs`: the latency of every request completed in
 * the window (load.ts's measureLatency is one at a time, measureThroughput keeps no latencies).
 */
const measureUnderLoad = async (target: Target, check?: (o: Outcome) => string | undefined): Promise<Latency> => {
  const { concurrency, measureMs, warmupMs } = settings
  const connections = Array.from({ length: concurrency }, () => connect(target))
  const windowStart = performance.now() + warmupMs
  const windowEnd = windowStart + measureMs
  const samples: Array<number> = []
  const statuses: Record<string, number> = {}
  let errors = 0
  const worker = async (connection: Connection) => {
    while (performance.now() < windowEnd) {
      const t0 = performance.now()
      const sent = await connection.send()
      const now = performance.now()
      if (sent.status.startsWith("error:")) await sleep(10)
      if (t0 < windowStart || now > windowEnd) continue
      const rejected = sent.ok && check !== undefined ? check(sent) : undefined
      samples.push(now - t0)
      const status = rejected ?? sent.status
      statuses[status] = (statuses[status] ?? 0) + 1
      if (!sent.ok || rejected !== undefined) errors++
    }
  }
  try {
    await Promise.all(connections.map(worker))
  } finally {
    for (const c of connections) c.close()
  }
  return latencyOf(samples, statuses, errors)
}

/** Async invokes at a steady rate until stopped; counts what was not accepted (202). */
const startProducer = (target: Target) => {
  const connections = Array.from({ length: 8 }, () => connect(target))
  const idle = [...connections]
  let running = true
  let sent = 0
  let failed = 0
  let skipped = 0
  const interval = 1000 / settings.producerPerSecond
  const start = performance.now()
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const wait = start + i * interval - performance.now()
      if (wait > 0) await sleep(wait)
      const connection = idle.pop()
      // all 8 busy (the node is stalled): the rate drops rather than piling up
      if (connection === undefined) {
        skipped++
        continue
      }
      sent++
      void connection.send().then((o) => {
        if (o.status !== "202") failed++
        idle.push(connection)
      })
    }
  })()
  return async () => {
    running = false
    await loop
    while (idle.length < connections.length) await sleep(20)
    for (const c of connections) c.close()
    return { sent, failed, skipped, perSecond: sent / ((performance.now() - start) / 1000) }
  }
}

interface Stream {
  count: number
  /** `data` events of its socket: about one per write of the node (loopback). */
  chunks: number
  lastId: number
  ordered: boolean
  status: number
  ended: boolean
  close: () => void
  /**
   * When given (the reference stream; every SAMPLE_EVERY-th of the others): how long each task.created took
   * from its transaction's start (the event's `at`) to this client, in ms; taken and emptied by `stats`.
   */
  readonly latencies?: Array<number>
}

/** Of the streams in the reader process, those that measure latency (their parsing costs that process CPU). */
const SAMPLE_EVERY = 50

/** Now, on the wall clock, to the microsecond (what PostgreSQL's `now()` in an event's `at` is on). */
const wallMs = () => performance.timeOrigin + performance.now()

/** An event's `at` (`2026-11-28T08:49:40.460437Z`) in ms since the epoch, to the microsecond. */
const atMs = (at: string) => Date.parse(at.slice(0, 23) + "Z") + Number(at.slice(23, 26)) / 1000

/** One `GET /v1/events` on its own socket, resuming after `after`; counts events, checks ids increase. */
const openStream = (
  baseUrl: string,
  apiKey: string,
  after: number | undefined,
  latencies?: Array<number>
): Promise<Stream> =>
  new Promise((resolve, reject) => {
    const url = new URL(`/v1/events${settings.streamTypes === "" ? "" : `?types=${settings.streamTypes}`}`, baseUrl)
    const stream: Stream = {
      count: 0,
      chunks: 0,
      lastId: 0,
      ordered: true,
      status: 0,
      ended: false,
      close: () => undefined,
      ...(latencies === undefined ? {} : { latencies })
    }
    const req = Http.get(url, {
      agent: false,
      headers: {
        "x-api-key": apiKey,
        accept: "text/event-stream",
        ...(after === undefined ? {} : { "last-event-id": String(after) })
      }
    }, (res) => {
      stream.status = res.statusCode ?? 0
      if (stream.status !== 200) {
        res.resume()
        return reject(new Error(`GET /v1/events: ${stream.status}`))
      }
      res.setEncoding("utf8")
      // `rest` is the unfinished last line: what is scanned always starts at a line's start
      let rest = ""
      // an event is its `id:` and its `data:`; an `id:` alone (a quiet stream's position) is no event
      let id: number | undefined
      let created = false
      res.on("data", (chunk: string) => {
        stream.chunks++
        const text = rest + chunk
        const complete = text.lastIndexOf("\n") + 1
        rest = text.slice(complete)
        for (let at = 0; at < complete;) {
          const end = text.indexOf("\n", at)
          if (text.startsWith("id: ", at)) id = Number(text.slice(at + 4, end))
          else if (latencies !== undefined && text.startsWith("event: ", at)) {
            created = text.startsWith("task.created", at + 7)
          } else if (text.startsWith("data: ", at) && id !== undefined) {
            if (created) {
              latencies!.push(wallMs() - atMs((JSON.parse(text.slice(at + 6, end)) as { at: string }).at))
              created = false
            }
            if (!(id > stream.lastId)) stream.ordered = false
            stream.lastId = id
            stream.count++
            id = undefined
          }
          at = end + 1
        }
      })
      res.on("end", () => void (stream.ended = true))
      res.on("error", () => void (stream.ended = true))
      resolve(stream)
    })
    stream.close = () => req.destroy()
    req.on("error", (e) => {
      stream.ended = true
      reject(e)
    })
  })

/** What the reader process tells: every stream's count and last id, and what they received in all. */
interface ReaderStats {
  readonly opened: number
  readonly openErrors: number
  readonly firstError: string | undefined
  readonly delivered: number
  readonly chunks: number
  readonly counts: ReadonlyArray<number>
  readonly lastIds: ReadonlyArray<number>
  readonly unordered: number
  readonly ended: number
  /** The sampling streams' latencies since the last `latencies` request (ms); empty for the other requests. */
  readonly latencies: ReadonlyArray<number>
}
type ReaderRequest =
  | {
    readonly kind: "open"
    readonly baseUrl: string
    readonly apiKey: string
    readonly after: number
    readonly n: number
  }
  | { readonly kind: "stats" }
  | { readonly kind: "latencies" }
  | { readonly kind: "close" }

/**
 * The streams are read by a child process (this file with --sse-readers), not by the one that times the
 * other endpoints: parsing 100k+ events a second on the timing process's event loop would add its own delay
 * to their latencies. Requests and answers go over IPC, one at a time.
 */
const startReaders = () => {
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--sse-readers"], {
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  const ask = (request: ReaderRequest) =>
    new Promise<ReaderStats>((resolve, reject) => {
      const onExit = () => reject(new Error("the SSE reader process exited"))
      child.once("exit", onExit)
      child.once("message", (answer) => {
        child.off("exit", onExit)
        resolve(answer as ReaderStats)
      })
      child.send(request)
    })
  return {
    open: (baseUrl: string, apiKey: string, after: number, n: number) =>
      ask({ kind: "open", baseUrl, apiKey, after, n }),
    stats: () => ask({ kind: "stats" }),
    /** The sampling streams' latencies since the last call (and the stats). */
    latencies: async () => (await ask({ kind: "latencies" })).latencies,
    close: async () => {
      await ask({ kind: "close" }).catch(() => undefined)
      child.kill()
    }
  }
}

/** The reader process: opens the streams it is asked for, in batches, and tells what they received. */
const readersChild = () => {
  const streams: Array<Stream> = []
  let openErrors = 0
  let firstError: string | undefined
  const stats = (latencies = false): ReaderStats => ({
    opened: streams.length,
    openErrors,
    firstError,
    delivered: streams.reduce((a, s) => a + s.count, 0),
    chunks: streams.reduce((a, s) => a + s.chunks, 0),
    counts: streams.map((s) => s.count),
    lastIds: streams.map((s) => s.lastId),
    unordered: streams.filter((s) => !s.ordered).length,
    ended: streams.filter((s) => s.ended).length,
    latencies: latencies ? streams.flatMap((s) => s.latencies?.splice(0) ?? []) : []
  })
  // the bench ended (or died): so do the streams
  process.on("disconnect", () => process.exit(0))
  process.on("message", async (request: ReaderRequest) => {
    if (request.kind === "open") {
      for (let i = 0; i < request.n; i += settings.openBatch) {
        const batch = await Promise.allSettled(
          Array.from(
            { length: Math.min(settings.openBatch, request.n - i) },
            (_, j) =>
              openStream(request.baseUrl, request.apiKey, request.after, (i + j) % SAMPLE_EVERY === 0 ? [] : undefined)
          )
        )
        for (const s of batch) {
          if (s.status === "fulfilled") streams.push(s.value)
          else if (openErrors++ === 0) firstError = String(s.reason)
        }
      }
    }
    if (request.kind === "close") { for (const s of streams) s.close() }
    process.send!(stats(request.kind === "latencies"))
    if (request.kind === "close") process.disconnect()
  })
}
if (process.argv.includes("--sse-readers")) readersChild()

const endpoints = (node: SwitchyardNode, apiKey: string, agentId: string) => {
  const headers = { "x-api-key": apiKey, "content-type": "application/json" }
  const body = JSON.stringify({ input: { text: "hi", user: { id: "u1", email: "u1@example.com" } } })
  return {
    me: { name: "GET /v1/me", url: `${node.baseUrl}/v1/me`, headers: { "x-api-key": apiKey } },
    invoke: { name: "sync invoke", url: `${node.baseUrl}/v1/agents/${agentId}/invoke`, method: "POST", headers, body },
    async: {
      name: "async invoke",
      url: `${node.baseUrl}/v1/agents/${agentId}/invoke?asynchronous=true`,
      method: "POST",
      headers,
      body
    }
  } satisfies Record<string, Target>
}

/** A sync invoke must answer the finished task. */
const completed = (o: Outcome) =>
  o.response !== undefined && responseBody(o.response).includes("\"status\":\"completed\"")
    ? undefined
    : "task:not-completed"

/** The monotonic clock in µs, as V8 stamps .cpuprofile samples (see support/cpuProfile.ts). */
const monotonicUs = () => process.hrtime.bigint() / 1000n
/** With BENCH_CPU_PROF: each measurement's window, to cut start-up and shutdown out of the profile. */
const windows: Array<{ readonly label: string; readonly fromUs: string; readonly toUs: string }> = []

const measureBoth = async (targets: ReturnType<typeof endpoints>, pid: number) => {
  const stopRss = sampleRss(pid)
  const cpu0 = cpuTimeMs([pid], { descendants: false })
  const t0 = performance.now()
  const me = await measureUnderLoad(targets.me)
  const invoke = await measureUnderLoad(targets.invoke, completed)
  const cpuMs = (cpuTimeMs([pid], { descendants: false }) ?? 0) - (cpu0 ?? 0)
  const cpu = cpuMs / (performance.now() - t0)
  return { me, invoke, rssMiB: stopRss(), nodeCpu: cpu, nodeCpuMs: cpuMs }
}

const printLatency = (label: string, l: Latency) =>
  console.log(
    `    ${label.padEnd(12)} p50 ${fmt(l.p50Ms, 2)} ms, p99 ${fmt(l.p99Ms, 2)} ms (${l.requests} requests${
      l.errors > 0 ? `, ${l.errors} ERRORS ${JSON.stringify(l.statuses)}` : ""
    })`
  )

/** RSS with nothing running: a second of quiet, then a second of samples. */
const quietRss = async (pid: number) => {
  await sleep(1000)
  const stop = sampleRss(pid)
  await sleep(1000)
  return stop().median
}

type Measured = Awaited<ReturnType<typeof measureBoth>>

const ratios = (withStreams: Measured, without: Measured) => ({
  p99: {
    me: ratio(withStreams.me.p99Ms, without.me.p99Ms),
    invoke: ratio(withStreams.invoke.p99Ms, without.invoke.p99Ms)
  },
  p50: {
    me: ratio(withStreams.me.p50Ms, without.me.p50Ms),
    invoke: ratio(withStreams.invoke.p50Ms, without.invoke.p50Ms)
  }
})

const round = async (node: SwitchyardNode, apiKey: string, targets: ReturnType<typeof endpoints>, index: number) => {
  const { settleMs, streams: n } = settings
  console.log(`Round ${index + 1} (load average ${Os.loadavg()[0]!.toFixed(2)})`)
  const phase = (label: string, m: Measured & { cpuUsPerDelivered?: number | null }, delivered?: number) => {
    console.log(
      `  ${label}: node RSS ${fmt(m.rssMiB.median, 1)} MiB, node CPU ${fmt(m.nodeCpu * 100, 0)}%${
        delivered === undefined ? "" : `, ${fmt(delivered, 0)} events/s delivered across the streams`
      }${
        "cpuUsPerDelivered" in m && typeof m.cpuUsPerDelivered === "number"
          ? ` (node CPU ${fmt(m.cpuUsPerDelivered, 1)} µs per event per stream, ${
            fmt("eventsPerWrite" in m ? Number(m.eventsPerWrite) : Number.NaN, 2)
          } events per write)`
          : ""
      }`
    )
    printLatency("GET /v1/me", m.me)
    printLatency("sync invoke", m.invoke)
  }
  // without streams: no producer, then the producer
  const idleWithout = await measureBoth(targets, node.pid)
  phase("without streams, no producer", idleWithout)
  let stopProducer = startProducer(targets.async)
  await sleep(1000)
  const busyWithout = await measureBoth(targets, node.pid)
  phase(`without streams, producer ${settings.producerPerSecond} tasks/s`, busyWithout)
  let produced = await stopProducer()
  const rssBefore = await quietRss(node.pid)

  // the reference stream: every other stream resumes after its last event, so all must see the same events
  const referenceLatencies: Array<number> = []
  const reference = await openStream(node.baseUrl, apiKey, undefined, referenceLatencies)
  await sleep(200)
  await fetch(targets.async.url, { method: "POST", headers: targets.async.headers, body: targets.async.body })
  for (let i = 0; reference.count === 0 && i < 200; i++) await sleep(25)
  if (reference.count === 0) throw new Error("the reference stream received no event in 5 s")
  // the same run's baseline of what a stream's latency is: the producer with the reference stream alone
  const stopAlone = startProducer(targets.async)
  await sleep(1000)
  referenceLatencies.length = 0
  await sleep(settings.measureMs)
  const latencyAlone = latencyOf(referenceLatencies.splice(0), {}, 0)
  await stopAlone()
  await sleep(500)
  const after = reference.lastId
  const referenceBase = reference.count
  const openStarted = performance.now()
  const readers = startReaders()
  const opened = await readers.open(node.baseUrl, apiKey, after, n)
  const openErrors = opened.openErrors
  if (openErrors > 0) console.log(`  !!! ${openErrors} stream(s) failed to open: ${opened.firstError}`)
  const openMs = performance.now() - openStarted
  await sleep(settleMs)
  const rssWith = await quietRss(node.pid)
  const rssDeltaMiB = rssWith - rssBefore
  console.log(
    `  ${opened.opened} streams open in ${fmt(openMs / 1000, 1)} s; node RSS at rest ${fmt(rssBefore, 1)} → ${
      fmt(rssWith, 1)
    } MiB: ${fmt((rssDeltaMiB * 1024) / opened.opened, 1)} KiB per stream`
  )
  const measureWith = async (label: string) => {
    const before = await readers.stats()
    const [t0, fromUs] = [performance.now(), monotonicUs()]
    const m = await measureBoth(targets, node.pid)
    windows.push({ label: `round ${index + 1}, ${label}`, fromUs: String(fromUs), toUs: String(monotonicUs()) })
    const after = await readers.stats()
    const events = after.delivered - before.delivered
    return {
      ...m,
      deliveredPerSecond: events / ((performance.now() - t0) / 1000),
      // events per socket read of a client: how many events one write of the node carried
      eventsPerWrite: events / Math.max(1, after.chunks - before.chunks),
      // all of the node's CPU in the window over the events delivered: an upper bound of one delivery's cost
      cpuUsPerDelivered: events > 0 ? (m.nodeCpuMs * 1000) / events : null
    }
  }
  const idleWith = await measureWith("with streams, no producer")
  phase("with streams, no producer", idleWith, idleWith.deliveredPerSecond)
  stopProducer = startProducer(targets.async)
  await sleep(1000)
  await readers.latencies()
  const busyWith = await measureWith("with streams, producer")
  // the sampled streams only: the reference is the first its tail wakes, the best placed of them all
  const latencyWith = latencyOf([...await readers.latencies()], {}, 0)
  phase(`with streams, producer ${settings.producerPerSecond} tasks/s`, busyWith, busyWith.deliveredPerSecond)
  produced = await stopProducer()

  // quiet: every stream must reach the reference's last event
  const settleStart = performance.now()
  let lastReference = -1
  let final = await readers.stats()
  while (performance.now() - settleStart < 30_000) {
    await sleep(500)
    final = await readers.stats()
    if (reference.lastId === lastReference && final.lastIds.every((id) => id === reference.lastId)) break
    lastReference = reference.lastId
  }
  const expected = reference.count - referenceBase
  const counts = final.counts
  const fanOut = {
    open: final.opened,
    openErrors,
    openSeconds: openMs / 1000,
    expected,
    minCount: Math.min(...counts),
    maxCount: Math.max(...counts),
    mismatched: counts.filter((c, i) => c !== expected || final.lastIds[i] !== reference.lastId).length,
    unordered: final.unordered + (reference.ordered ? 0 : 1),
    ended: final.ended
  }
  await readers.close()
  reference.close()
  const delivery = { alone: latencyAlone, withStreams: latencyWith }
  console.log(
    `  task.created, its transaction's start → a stream, p50 / p99: ${fmt(delivery.alone.p50Ms, 1)} / ${
      fmt(delivery.alone.p99Ms, 1)
    } ms with one stream open, ${fmt(delivery.withStreams.p50Ms, 1)} / ${fmt(delivery.withStreams.p99Ms, 1)} ms ` +
      `with ${opened.opened} more (${delivery.withStreams.requests} samples, from every ${SAMPLE_EVERY}th stream)`
  )
  const result = {
    loadAverage: Os.loadavg()[0]!,
    idle: { without: idleWithout, with: idleWith, ...ratios(idleWith, idleWithout) },
    producing: { without: busyWithout, with: busyWith, ...ratios(busyWith, busyWithout) },
    rssAtRestMiB: { without: rssBefore, with: rssWith },
    rssDeltaMiB,
    kibPerStream: (rssDeltaMiB * 1024) / opened.opened,
    producer: produced,
    fanOut,
    delivery
  }
  console.log(
    `  p99 with/without, no producer: GET /v1/me ${fmt(result.idle.p99.me, 2)}x, sync invoke ${
      fmt(result.idle.p99.invoke, 2)
    }x; producer on: GET /v1/me ${fmt(result.producing.p99.me, 2)}x, sync invoke ${
      fmt(result.producing.p99.invoke, 2)
    }x (producer ${fmt(produced.perSecond, 1)} tasks/s, ${produced.failed} failed, ${produced.skipped} skipped)`
  )
  console.log(
    `  fan-out: each stream ${fanOut.minCount}–${fanOut.maxCount} events, the reference ${expected}; ` +
      `${fanOut.mismatched} mismatched, ${fanOut.unordered} out of order, ${fanOut.ended} ended early`
  )
  return result
}

export const run = async () => {
  const loadBefore = warnIfBusy()
  console.log(`Open files limit of this shell (the node inherits it): ${Os.platform() === "linux" ? fdLimit() : "n/a"}`)
  const { dir: profileDir, nodeArgs } = cpuProfiling()
  const tmp = tempDir("bench-sse-")
  try {
    const node = await startNode({
      nodeArgs,
      dataDir: Path.join(tmp, "data"),
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true
    })
    try {
      const apiKey = node.apiKey!
      const created = await fetch(`${node.baseUrl}/v1/agents`, {
        method: "POST",
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ name: "bench", model: { provider: "scripted", script: [{ text: "done" }] } })
      })
      if (created.status !== 201) throw new Error(`POST /v1/agents: ${created.status} ${await created.text()}`)
      const ends = endpoints(node, apiKey, ((await created.json()) as { id: string }).id)
      const count = rounds()
      const results: Array<Awaited<ReturnType<typeof round>>> = []
      for (let i = 0; i < count; i++) results.push(await round(node, apiKey, ends, i))
      const first = results[0]!
      const spreadOf = (f: (r: (typeof results)[number]) => number) => spread(results.map(f))
      const summary = {
        kibPerStream: spreadOf((r) => r.kibPerStream),
        kibPerStreamFirstRound: first.kibPerStream,
        p99Ratio: {
          idle: { me: spreadOf((r) => r.idle.p99.me), invoke: spreadOf((r) => r.idle.p99.invoke) },
          producing: { me: spreadOf((r) => r.producing.p99.me), invoke: spreadOf((r) => r.producing.p99.invoke) }
        },
        p50Ratio: {
          idle: { me: spreadOf((r) => r.idle.p50.me), invoke: spreadOf((r) => r.idle.p50.invoke) },
          producing: { me: spreadOf((r) => r.producing.p50.me), invoke: spreadOf((r) => r.producing.p50.invoke) }
        },
        deliveredPerSecond: {
          idle: spreadOf((r) => r.idle.with.deliveredPerSecond),
          producing: spreadOf((r) => r.producing.with.deliveredPerSecond)
        },
        cpuUsPerDelivered: spreadOf((r) => r.producing.with.cpuUsPerDelivered ?? Number.NaN),
        deliveryP50Ms: {
          alone: spreadOf((r) => r.delivery.alone.p50Ms),
          withStreams: spreadOf((r) => r.delivery.withStreams.p50Ms)
        },
        deliveryP99Ms: {
          alone: spreadOf((r) => r.delivery.alone.p99Ms),
          withStreams: spreadOf((r) => r.delivery.withStreams.p99Ms)
        },
        producerPerSecondWith: spreadOf((r) => r.producer.perSecond)
      }
      const errors = results.reduce(
        (a, r) =>
          a + [r.idle, r.producing].reduce(
            (b, p) => b + p.without.me.errors + p.without.invoke.errors + p.with.me.errors + p.with.invoke.errors,
            0
          ) + r.producer.failed + r.fanOut.openErrors,
        0
      )
      const fanOutOk = results.every((r) =>
        r.fanOut.mismatched === 0 && r.fanOut.unordered === 0 && r.fanOut.ended === 0 &&
        r.fanOut.open === settings.streams
      )
      const pass = (x: number) => (x <= targets.p99WithVsWithout ? "PASS" : "MISS")
      console.log(`\nSummary over ${count} round(s) (median [min–max]):`)
      console.log(`  memory per stream at rest: ${fmtSpread(summary.kibPerStream, 1)} KiB`)
      for (const [label, key] of [["no producer", "idle"], ["producer on", "producing"]] as const) {
        const r = summary.p99Ratio[key]
        console.log(
          `  p99 with/without, ${label}: GET /v1/me ${fmtSpread(r.me, 2)}x ${pass(r.me.median)}, sync invoke ${
            fmtSpread(r.invoke, 2)
          }x ${pass(r.invoke.median)} (target ≤ ${targets.p99WithVsWithout}x); events delivered across the streams ${
            fmtSpread(summary.deliveredPerSecond[key], 0)
          }/s`
        )
      }
      console.log(
        `  node CPU per event delivered to one stream (producer on, all of the node's CPU): ${
          fmtSpread(summary.cpuUsPerDelivered, 1)
        } µs; producer reached ${fmtSpread(summary.producerPerSecondWith, 1)} of ${settings.producerPerSecond} tasks/s`
      )
      console.log(
        `  task.created, its transaction's start → a stream, p50 / p99: ${
          fmtSpread(summary.deliveryP50Ms.alone, 1)
        } / ${fmtSpread(summary.deliveryP99Ms.alone, 1)} ms with one stream open, ${
          fmtSpread(summary.deliveryP50Ms.withStreams, 1)
        } / ${fmtSpread(summary.deliveryP99Ms.withStreams, 1)} ms with ${settings.streams} more`
      )
      console.log(`  fan-out: ${fanOutOk ? "every stream saw every event, in order" : "!!! FAILED (see the rounds)"}`)
      const ok = errors === 0 && fanOutOk
      appendRun(name, { ...settings, rounds: count, logLevel: "warning", targets }, {
        ok,
        loadBefore,
        loadAfter: Os.loadavg()[0]!,
        errors,
        summary,
        rounds: results
      })
      return { ok }
    } finally {
      await node.stop()
      if (profileDir !== undefined) {
        console.log(`\nThe node's CPU profile is in ${profileDir}. Measurement windows:`)
        for (const w of windows) {
          console.log(
            `  ${w.label}: node --import tsx bench/support/cpuProfile.ts FILE --from ${w.fromUs} --to ${w.toUs}`
          )
        }
      }
    }
  } finally {
    await stopAll()
    Fs.rmSync(tmp, { recursive: true, force: true })
  }
}

/** The soft limit on open files (`ulimit -n`) of this process, which the node inherits. */
const fdLimit = (): string => {
  const limits = Fs.readFileSync("/proc/self/limits", "utf8")
  const line = limits.split("\n").find((l) => l.startsWith("Max open files"))
  return line?.replace(/^Max open files\s+/, "").replace(/\s+files\s*$/, "").replace(/\s+/, " (soft), ") + " (hard)"
}
