import { Effect } from "effect"
import { Worker } from "node:worker_threads"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import type { FromWorker, HostFailure, SandboxJob, SandboxOutcome, ToWorker } from "./sandbox/SandboxProtocol.js"

/** What a function's `ctx` call becomes on the node: JSON text in, JSON text or a failure out. */
export type HostHandler = (
  op: string,
  args: string
) => Promise<{ ok: true; value: string } | { ok: false; error: HostFailure }>

/** A call's end, decided here when its worker stopped answering (past its timeout, or it died). */
const failed = (kind: "timeout" | "memory" | "error", message: string): SandboxOutcome => ({
  ok: false,
  kind,
  message,
  logs: [],
  logsTruncated: false
})

// the worker's own JS heap (the host side of QuickJS: strings passing through); WebAssembly memory is apart
const WORKER_HEAP_MB = 128
// a call's worker that has not answered this long after its timeout is stuck: it is terminated
const GRACE_MS = 1_000
const IDLE_WORKER_MS = 30_000
const MAX_QUEUE = 1_000

interface Call {
  readonly id: number
  readonly job: SandboxJob
  readonly host: HostHandler
  readonly done: (outcome: SandboxOutcome) => void
  worker?: Slot
  timer?: ReturnType<typeof setTimeout>
}

interface Slot {
  readonly worker: Worker
  /** Calls on this worker; `running` of them are executing (not waiting for a host call). */
  readonly calls: Map<number, Call>
  running: number
  idleSince: number
}

/**
 * The sandbox workers (sandbox/SandboxWorker.ts): a call goes to a worker that is running nothing (a call
 * waiting for a `ctx` answer does not hold its worker), a new worker is started up to `maxWorkers`, else it
 * waits. A worker that does not answer within a call's timeout and a grace second is terminated, which
 * stops whatever it runs; so does one that dies. One warm worker always stays.
 */
export const makeSandboxPool = (maxWorkers: number) => {
  const slots: Array<Slot> = []
  const queue: Array<Call> = []
  let nextId = 0

  const spawn = () => {
    const worker = new Worker(new URL("./sandbox/worker.mjs", import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
      stdout: false,
      stderr: false
    })
    worker.unref()
    const slot: Slot = { worker, calls: new Map(), running: 0, idleSince: Date.now() }
    slots.push(slot)
    worker.on("message", (message: FromWorker) => onMessage(slot, message))
    worker.on("error", (e) => retire(slot, String(e?.message ?? e)))
    worker.on("exit", (code) => retire(slot, `exit ${code}`))
    return slot
  }

  /** A worker gone or being terminated: no call goes to it again, and the calls it held end now. */
  const retire = (slot: Slot, why: string) => {
    const at = slots.indexOf(slot)
    if (at < 0) return
    slots.splice(at, 1)
    const memory = /memory/i.test(why)
    for (const call of slot.calls.values()) {
      clearTimeout(call.timer)
      call.done(
        memory
          ? failed("memory", `The function used more memory than the sandbox allows and was stopped.`)
          : failed("error", `The sandbox running the function stopped (${why}).`)
      )
    }
    slot.calls.clear()
    drain()
  }

  const post = (slot: Slot, message: ToWorker) => slot.worker.postMessage(message)

  const onMessage = (slot: Slot, message: FromWorker) => {
    if (message.type === "ready") return
    const call = slot.calls.get(message.id)
    if (call === undefined) return
    if (message.type === "done") {
      slot.calls.delete(call.id)
      slot.running--
      if (slot.calls.size === 0) slot.idleSince = Date.now()
      clearTimeout(call.timer)
      call.done(message.outcome)
      drain()
      return
    }
    // a host call: the function waits, its worker may take another call meanwhile
    slot.running--
    drain()
    call.host(message.op, message.args).then(
      (reply) => {
        if (!slot.calls.has(call.id)) return
        slot.running++
        post(slot, {
          type: "host_result",
          id: call.id,
          callId: message.callId,
          ok: reply.ok,
          ...(reply.ok ? { value: reply.value } : { error: reply.error })
        })
      },
      () => {
        if (!slot.calls.has(call.id)) return
        slot.running++
        post(slot, {
          type: "host_result",
          id: call.id,
          callId: message.callId,
          ok: false,
          error: { code: "internal_error", message: "the call failed" }
        })
      }
    )
  }

  const start = (slot: Slot, call: Call) => {
    call.worker = slot
    slot.calls.set(call.id, call)
    slot.running++
    call.timer = setTimeout(() => {
      // the worker did not end the call itself: it is stuck in code that does not check the deadline
      if (!slot.calls.has(call.id)) return
      slot.calls.delete(call.id)
      slot.running--
      call.done(
        failed("timeout", `The function ran longer than its timeout_ms (${call.job.timeoutMs} ms) and was stopped.`)
      )
      retire(slot, "a call on it stopped answering")
      void slot.worker.terminate()
    }, call.job.timeoutMs + GRACE_MS)
    post(slot, { type: "run", id: call.id, job: call.job })
  }

  const drain = () => {
    while (queue.length > 0) {
      let slot = slots.find((s) => s.running === 0)
      if (slot === undefined && slots.length < maxWorkers) slot = spawn()
      if (slot === undefined) return
      start(slot, queue.shift()!)
    }
  }

  const reaper = setInterval(() => {
    const now = Date.now()
    for (const slot of slots.slice(1)) {
      if (slot.calls.size === 0 && now - slot.idleSince > IDLE_WORKER_MS) {
        slots.splice(slots.indexOf(slot), 1)
        void slot.worker.terminate()
      }
    }
    if (slots.length === 0) spawn()
  }, 5_000)
  reaper.unref()
  spawn()

  /** Runs one call; interrupting it stops the function (its worker is told, or terminated if stuck). */
  const run = (job: SandboxJob, host: HostHandler) =>
    Effect.async<SandboxOutcome | "busy">((resume) => {
      if (queue.length >= MAX_QUEUE) return resume(Effect.succeed("busy" as const))
      const call: Call = { id: ++nextId, job, host, done: (outcome) => resume(Effect.succeed(outcome)) }
      queue.push(call)
      drain()
      return Effect.sync(() => {
        const waiting = queue.indexOf(call)
        if (waiting >= 0) queue.splice(waiting, 1)
        else if (call.worker?.calls.has(call.id)) post(call.worker, { type: "cancel", id: call.id })
      })
    })

  const close = Effect.promise(() => {
    clearInterval(reaper)
    return Promise.all(slots.splice(0).map((s) => s.worker.terminate()))
  })

  return { run, close, workers: () => slots.length } as const
}

/** This node's sandbox pool: `SWITCHYARD_FUNCTION_WORKERS` threads at most (default: the cores, at least 2). */
export class SandboxPool extends Effect.Service<SandboxPool>()("functions/SandboxPool", {
  scoped: Effect.gen(function*() {
    // SWITCHYARD_FUNCTION_WORKERS, checked with the other settings before the node starts (at least 1)
    const pool = makeSandboxPool((yield* SwitchyardConfig).functionWorkers)
    yield* Effect.addFinalizer(() => pool.close)
    return { run: pool.run, workers: pool.workers } as const
  })
}) {}
