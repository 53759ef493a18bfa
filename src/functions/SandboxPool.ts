import { Effect } from "effect"
import { Worker } from "node:worker_threads"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import type { FromWorker, HostFailure, SandboxJob, SandboxOutcome, ToWorker } from "./sandbox/SandboxProtocol.js"

/** What a function's `ctx` call becomes on the node: JSON text in, JSON text or a failure out. */
export type HostHandler = (
  op: string,
  args: string
) => Promise<{ ok: true; value: string } | { ok: false; error: HostFailure }>

/**
 * A call's end: its outcome; `busy` when the queue was full; `expired` when its timeout passed while it waited
 * for a worker (nothing of it ran).
 */
type PoolOutcome = SandboxOutcome | "busy" | "expired"

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
// an abandoned call's worker reads the cancel at once unless the function is running its code (QuickJS holds
// the thread): one that has not ended the call by then is terminated
const CANCEL_GRACE_MS = 100
const IDLE_WORKER_MS = 30_000
const MAX_QUEUE = 1_000

interface Call {
  readonly id: number
  /** The organization asking: it holds at most `share` workers at once. */
  readonly owner: string
  readonly job: SandboxJob
  /** `Date.now()` at which the call is over: its timeout counts from when it was asked, queue wait included. */
  readonly deadline: number
  readonly host: HostHandler
  readonly done: (outcome: SandboxOutcome | "expired") => void
  slot?: Slot
  /** On its worker and running its code (not waiting for a `ctx` answer): it holds the worker. */
  executing: boolean
  timer?: ReturnType<typeof setTimeout>
}

interface Slot {
  readonly worker: Worker
  readonly calls: Map<number, Call>
  idleSince: number
}

const holdsWorker = (slot: Slot) => {
  for (const call of slot.calls.values()) if (call.executing) return true
  return false
}

/**
 * The sandbox workers (sandbox/SandboxWorker.ts): a call goes to a worker that is running nothing (a call
 * waiting for a `ctx` answer does not hold its worker), a new worker is started up to `maxWorkers`, else it
 * waits, at most until its deadline. One organization holds at most all workers but one at once, so a
 * tenant whose functions spin cannot leave another's calls waiting for the whole of their timeouts. A worker
 * that does not answer within a call's deadline and a grace second is terminated, which stops whatever it
 * runs; so does one that dies, and one whose abandoned call does not stop at once. One warm worker always
 * stays.
 */
export const makeSandboxPool = (maxWorkers: number) => {
  const slots: Array<Slot> = []
  const queue: Array<Call> = []
  const share = Math.max(1, maxWorkers - 1)
  let nextId = 0

  const spawn = () => {
    const worker = new Worker(new URL("./sandbox/worker.mjs", import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
      stdout: false,
      stderr: false
    })
    worker.unref()
    const slot: Slot = { worker, calls: new Map(), idleSince: Date.now() }
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

  /** Ends `call` with `outcome` and terminates its worker, stuck in the call's code. */
  const terminate = (slot: Slot, call: Call, outcome: SandboxOutcome | undefined, why: string) => {
    if (!slot.calls.delete(call.id)) return
    if (outcome !== undefined) call.done(outcome)
    retire(slot, why)
    void slot.worker.terminate()
  }

  const post = (slot: Slot, message: ToWorker) => slot.worker.postMessage(message)

  const onMessage = (slot: Slot, message: FromWorker) => {
    if (message.type === "ready") return
    const call = slot.calls.get(message.id)
    if (call === undefined) return
    if (message.type === "done") {
      slot.calls.delete(call.id)
      if (slot.calls.size === 0) slot.idleSince = Date.now()
      clearTimeout(call.timer)
      call.done(message.outcome)
      drain()
      return
    }
    // a host call: the function waits, its worker may take another call meanwhile
    call.executing = false
    drain()
    const reply = (answer: Extract<ToWorker, { type: "host_result" }>) => {
      if (!slot.calls.has(call.id)) return
      call.executing = true
      post(slot, answer)
    }
    const { callId, id } = message
    call.host(message.op, message.args).then(
      (r) => reply({ type: "host_result", id, callId, ok: r.ok, ...(r.ok ? { value: r.value } : { error: r.error }) }),
      () =>
        reply({
          type: "host_result",
          id,
          callId,
          ok: false,
          error: { code: "internal_error", message: "the call failed" }
        })
    )
  }

  const start = (slot: Slot, call: Call) => {
    call.slot = slot
    call.executing = true
    slot.calls.set(call.id, call)
    clearTimeout(call.timer)
    // the worker did not end the call itself: it is stuck in code that does not check the deadline
    call.timer = setTimeout(
      () =>
        terminate(
          slot,
          call,
          failed("timeout", `The function ran longer than its timeout_ms (${call.job.timeoutMs} ms) and was stopped.`),
          "a call on it stopped answering"
        ),
      call.deadline - Date.now() + GRACE_MS
    )
    post(slot, { type: "run", id: call.id, job: call.job, deadline: call.deadline })
  }

  const expire = (call: Call) => {
    clearTimeout(call.timer)
    call.done("expired")
  }

  /** Takes `call` out of the queue; false when it is not there (it started, or ended). */
  const unqueue = (call: Call) => {
    const at = queue.indexOf(call)
    if (at < 0) return false
    queue.splice(at, 1)
    clearTimeout(call.timer)
    return true
  }

  const drain = () => {
    const held = new Map<string, number>()
    for (const slot of slots) {
      for (const call of slot.calls.values()) if (call.executing) held.set(call.owner, (held.get(call.owner) ?? 0) + 1)
    }
    const now = Date.now()
    for (let i = 0; i < queue.length;) {
      const call = queue[i]!
      if (call.deadline <= now) {
        queue.splice(i, 1)
        expire(call)
        continue
      }
      const holds = held.get(call.owner) ?? 0
      if (holds >= share) {
        i++
        continue
      }
      let slot = slots.find((s) => !holdsWorker(s))
      if (slot === undefined && slots.length < maxWorkers) slot = spawn()
      if (slot === undefined) return
      queue.splice(i, 1)
      held.set(call.owner, holds + 1)
      start(slot, call)
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

  /**
   * Runs one call of `owner` (an organization); its `timeoutMs` counts from now. Interrupting it stops the
   * function: its worker is told, and terminated if the function is running its code and does not stop.
   */
  const run = (owner: string, job: SandboxJob, host: HostHandler) =>
    Effect.async<PoolOutcome>((resume) => {
      if (queue.length >= MAX_QUEUE) return resume(Effect.succeed("busy" as const))
      const call: Call = {
        id: ++nextId,
        owner,
        job,
        deadline: Date.now() + job.timeoutMs,
        host,
        executing: false,
        done: (outcome) => resume(Effect.succeed(outcome))
      }
      queue.push(call)
      call.timer = setTimeout(() => unqueue(call) && expire(call), job.timeoutMs)
      drain()
      return Effect.sync(() => {
        if (unqueue(call)) return
        const slot = call.slot
        if (slot === undefined || !slot.calls.has(call.id)) return
        post(slot, { type: "cancel", id: call.id })
        if (!call.executing) return
        clearTimeout(call.timer)
        call.timer = setTimeout(
          () => terminate(slot, call, undefined, "a call on it was abandoned and did not stop"),
          CANCEL_GRACE_MS
        )
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
