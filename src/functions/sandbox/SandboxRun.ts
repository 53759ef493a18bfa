import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSWASMModule } from "quickjs-emscripten-core"
import {
  type FailureKind,
  type HostFailure,
  MAX_HOST_ARGS_BYTES,
  MAX_HOST_CALLS,
  MAX_LOG_BYTES,
  MAX_LOG_LINE,
  MAX_LOG_LINES,
  type SandboxJob,
  type SandboxOutcome
} from "./SandboxProtocol.js"

export type HostReply = { readonly ok: true; readonly value: string } | {
  readonly ok: false
  readonly error: HostFailure
}

/** How a run reaches the node: one async call per `ctx` capability, arguments and answer as JSON text. */
export type HostCall = (op: string, args: string) => Promise<HostReply>

/** Outcome of a run, and whether its module must be thrown away (a QuickJS state we could not clean up). */
export interface RunResult {
  readonly outcome: SandboxOutcome
  readonly poisoned: boolean
}

export const FILE_NAME = "function.js"
const STACK_SIZE = 512 * 1024
const MAX_STACK_LINES = 10

/**
 * Evaluated in each fresh context before the function's code, so it holds the intrinsics as they were then
 * (a function that replaces `JSON.stringify` or `Promise.prototype.then` changes nothing here). `ctx` is
 * made of frozen objects whose methods only pass JSON text to the three host functions.
 */
const BOOTSTRAP = `(function (host, hostLog, done, maxOutput) {
  "use strict";
  const stringify = JSON.stringify, parse = JSON.parse, apply = Reflect.apply, freeze = Object.freeze;
  const Str = String, P = Promise, then = P.prototype.then, resolved = P.resolve(undefined);
  const on = (p, ok, bad) => apply(then, p, [ok, bad]);
  const text = (v) => {
    if (typeof v === "string") return v;
    try { const s = stringify(v); return s === undefined ? Str(v) : s } catch (e) {
      try { return Str(v) } catch (e2) { return "[unprintable]" }
    }
  };
  const call = (op, args) => on(host(op, stringify(args)), (r) => r === undefined ? undefined : parse(r));
  const describe = (e) => {
    try {
      if (e !== null && (typeof e === "object" || typeof e === "function")) {
        const stack = e.stack;
        return stringify({ name: Str(e.name), message: Str(e.message), stack: typeof stack === "string" ? stack : "" });
      }
      return stringify({ name: "Error", message: "the function threw " + text(e), stack: "" });
    } catch (x) {
      return stringify({ name: "Error", message: "the function threw a value that cannot be read", stack: "" });
    }
  };
  const encode = (v) => { const s = stringify(v); return s === undefined ? "null" : s.length > maxOutput ? s.length : s };
  const ctx = freeze({
    log: (...values) => { let line = ""; for (let i = 0; i < values.length; i++) line += (i ? " " : "") + text(values[i]); hostLog(line) },
    connectors: freeze({
      invoke: (connection_id, operation_id, params) =>
        call("connectors.invoke", { connection_id, operation_id, params: params === undefined ? {} : params })
    }),
    files: freeze({
      list: (prefix) => call("files.list", { prefix }),
      read: (name, offset) => call("files.read", { name, offset }),
      write: (name, text) => call("files.write", { name, text })
    })
  });
  return freeze({
    ctx,
    run: (fn, inputText) => {
      const input = parse(inputText);
      on(on(resolved, () => fn(input, ctx)), (v) => {
        let out;
        try { out = encode(v) } catch (e) { done(false, describe(e)); return }
        done(true, out);
      }, (e) => done(false, describe(e)));
    }
  });
})`

interface ErrorInfo {
  readonly name: string
  readonly message: string
  readonly stack: string
}

const stackOf = (stack: string) =>
  stack.split("\n").map((l) => l.trim()).filter((l) => l.includes(FILE_NAME)).slice(0, MAX_STACK_LINES).join("\n")

/** Runs one call of a function in a fresh runtime and context of `module`: no state survives the call. */
export const runInSandbox = (
  module: QuickJSWASMModule,
  job: SandboxJob,
  host: HostCall,
  onCancel: (cancel: () => void) => void,
  /** Whether the module's memory is (nearly) at its cap: QuickJS throws `null` when it cannot even make an error. */
  memoryFull: () => boolean = () => false
): Promise<RunResult> =>
  new Promise<RunResult>((resolveRun) => {
    const started = Date.now()
    const deadline = started + job.timeoutMs
    const logs: Array<string> = []
    let logBytes = 0
    let logsTruncated = false
    let finished = false
    let cancelled = false
    let hostCalls = 0
    const pending = new Set<QuickJSDeferredPromise>()
    const handles: Array<QuickJSHandle> = []
    let result: { ok: true; output: string } | { ok: false; info: ErrorInfo; kind?: FailureKind } | undefined

    const runtime = module.newRuntime()
    runtime.setMemoryLimit(job.memoryMb * 1024 * 1024)
    runtime.setMaxStackSize(STACK_SIZE)
    runtime.setInterruptHandler(() => cancelled || Date.now() > deadline)
    const context: QuickJSContext = runtime.newContext()
    const keep = (h: QuickJSHandle) => {
      handles.push(h)
      return h
    }

    const readError = (h: QuickJSHandle): ErrorInfo => {
      try {
        const d = context.dump(h) as unknown
        if (d !== null && typeof d === "object") {
          const o = d as Record<string, unknown>
          return { name: String(o.name ?? "Error"), message: String(o.message ?? ""), stack: String(o.stack ?? "") }
        }
        return { name: "Error", message: `the function threw ${JSON.stringify(d) ?? String(d)}`, stack: "" }
      } catch {
        return { name: "InternalError", message: "out of memory", stack: "" }
      }
    }

    const timer = setTimeout(() => {
      if (!finished) finish({ ok: false, info: { name: "InternalError", message: "interrupted", stack: "" } })
    }, Math.max(0, deadline - Date.now()) + 5)
    onCancel(() => {
      cancelled = true
      if (!finished) finish({ ok: false, info: { name: "InternalError", message: "interrupted", stack: "" } })
    })

    const kindOf = (info: ErrorInfo): FailureKind => {
      if (info.name === "InternalError" && info.message === "interrupted") return "timeout"
      if (/out of memory/.test(info.message)) return "memory"
      if (/^the function threw (null|undefined)/.test(info.message) && memoryFull()) return "memory"
      return "error"
    }

    function finish(r: NonNullable<typeof result>) {
      if (finished) return
      finished = true
      clearTimeout(timer)
      let poisoned = false
      for (const d of pending) {
        try {
          d.dispose()
        } catch {
          poisoned = true
        }
      }
      for (const h of handles) {
        try {
          if (h.alive) h.dispose()
        } catch {
          poisoned = true
        }
      }
      try {
        context.dispose()
        runtime.dispose()
      } catch {
        poisoned = true
      }
      const logged = { logs, logsTruncated }
      if (r.ok) {
        resolveRun({ poisoned, outcome: { ok: true, output: r.output, ...logged } })
        return
      }
      const kind = r.kind ?? kindOf(r.info)
      const message = kind === "timeout"
        ? `The function ran longer than its timeout_ms (${job.timeoutMs} ms) and was stopped.`
        : kind === "memory"
        ? `The function used more than its memory_mb (${job.memoryMb} MB) and was stopped.`
        : kind === "output_too_large"
        ? r.info.message
        : `${r.info.name}: ${r.info.message}`
      const stack = kind === "error" ? stackOf(r.info.stack) : ""
      resolveRun({ poisoned, outcome: { ok: false, kind, message, ...(stack === "" ? {} : { stack }), ...logged } })
    }

    /** Runs the function's pending jobs until it is done or waits for the host. */
    const pump = () => {
      try {
        while (!finished) {
          if (result !== undefined) return finish(result)
          const r = runtime.executePendingJobs(1000)
          if (r.error) {
            const info = readError(r.error)
            r.error.dispose()
            return finish({ ok: false, info })
          }
          if (result !== undefined) return finish(result)
          if (Date.now() > deadline || cancelled) {
            return finish({ ok: false, info: { name: "InternalError", message: "interrupted", stack: "" } })
          }
          if (r.value === 0) {
            if (pending.size === 0) {
              return finish({
                ok: false,
                info: {
                  name: "Error",
                  message: "the function's promise never settles (it awaits something that never happens)",
                  stack: ""
                }
              })
            }
            return // waits for a host call to answer
          }
        }
      } catch (e) {
        finish({ ok: false, info: { name: "InternalError", message: String((e as Error)?.message ?? e), stack: "" } })
      }
    }

    try {
      const hostFn = keep(context.newFunction("host", (opH, argsH) => {
        const deferred = context.newPromise()
        const reject = (failure: HostFailure) => {
          const error = context.newError({ name: "CapabilityError", message: failure.message })
          const code = context.newString(failure.code)
          context.setProp(error, "code", code)
          code.dispose()
          if (failure.status !== undefined) context.setProp(error, "status", context.newNumber(failure.status))
          deferred.reject(error)
          error.dispose()
        }
        if (context.typeof(opH) !== "string" || context.typeof(argsH) !== "string") {
          reject({ code: "invalid_call", message: "ctx methods take plain JSON values" })
          return deferred.handle
        }
        const op = context.getString(opH)
        const args = context.getString(argsH)
        if (++hostCalls > MAX_HOST_CALLS) {
          reject({ code: "too_many_calls", message: `a function makes at most ${MAX_HOST_CALLS} ctx calls` })
          return deferred.handle
        }
        if (args.length > MAX_HOST_ARGS_BYTES) {
          reject({
            code: "payload_too_large",
            message: `ctx call arguments are capped at ${MAX_HOST_ARGS_BYTES} bytes`
          })
          return deferred.handle
        }
        pending.add(deferred)
        host(op, args).then(
          (reply) => {
            if (finished) return
            pending.delete(deferred)
            try {
              if (reply.ok) {
                const value = context.newString(reply.value)
                deferred.resolve(value)
                value.dispose()
              } else {
                reject(reply.error)
              }
            } catch (e) {
              return finish({ ok: false, info: { name: "InternalError", message: String(e), stack: "" } })
            }
            pump()
          },
          () => {
            if (finished) return
            pending.delete(deferred)
            reject({ code: "internal_error", message: "the call failed" })
            pump()
          }
        )
        return deferred.handle
      }))
      const logFn = keep(context.newFunction("log", (lineH) => {
        if (context.typeof(lineH) !== "string") return
        if (logs.length >= MAX_LOG_LINES || logBytes >= MAX_LOG_BYTES) {
          logsTruncated = true
          return
        }
        let line = context.getString(lineH)
        if (line.length > MAX_LOG_LINE) {
          line = `${line.slice(0, MAX_LOG_LINE)}…`
          logsTruncated = true
        }
        logBytes += line.length
        logs.push(line)
      }))
      const doneFn = keep(context.newFunction("done", (okH, payloadH) => {
        if (result !== undefined) return
        const ok = context.dump(okH) === true
        if (context.typeof(payloadH) === "number") {
          const length = context.getNumber(payloadH)
          result = {
            ok: false,
            kind: "output_too_large",
            info: {
              name: "Error",
              message: `The function's output is ${length} characters of JSON; the cap is ${job.maxOutputBytes} bytes.`,
              stack: ""
            }
          }
          return
        }
        const payload = context.getString(payloadH)
        if (ok) {
          result = Buffer.byteLength(payload) > job.maxOutputBytes
            ? {
              ok: false,
              kind: "output_too_large",
              info: {
                name: "Error",
                message: `The function's output is ${
                  Buffer.byteLength(payload)
                } bytes of JSON; the cap is ${job.maxOutputBytes} bytes.`,
                stack: ""
              }
            }
            : { ok: true, output: payload }
        } else {
          const info = JSON.parse(payload) as ErrorInfo
          result = { ok: false, info }
        }
      }))

      const boot = context.evalCode(BOOTSTRAP, "bootstrap.js")
      if (boot.error) {
        const info = readError(boot.error)
        boot.error.dispose()
        return finish({ ok: false, info })
      }
      const bootFn = keep(boot.value)
      const maxOutput = keep(context.newNumber(job.maxOutputBytes))
      const made = context.callFunction(bootFn, context.undefined, hostFn, logFn, doneFn, maxOutput)
      if (made.error) {
        const info = readError(made.error)
        made.error.dispose()
        return finish({ ok: false, info })
      }
      const driver = keep(made.value)

      const evaluated = context.evalCode(job.code, FILE_NAME, { type: "module", strict: true })
      if (evaluated.error) {
        const info = readError(evaluated.error)
        evaluated.error.dispose()
        return finish({ ok: false, info })
      }
      let exports = keep(evaluated.value)
      if (context.typeof(exports) === "object") {
        const state = context.getPromiseState(exports)
        if (state.type !== "fulfilled" || state.notAPromise !== true) {
          // top-level await: the module's namespace comes once its promise settles
          const jobs = runtime.executePendingJobs(1000)
          if (jobs.error) {
            const info = readError(jobs.error)
            jobs.error.dispose()
            return finish({ ok: false, info })
          }
          const settled = context.getPromiseState(exports)
          if (settled.type === "pending") {
            return finish({
              ok: false,
              info: { name: "Error", message: "the module's top-level await never settles", stack: "" }
            })
          }
          if (settled.type === "rejected") {
            const info = readError(settled.error)
            settled.error.dispose()
            return finish({ ok: false, info })
          }
          exports = keep(settled.value)
        } else if (state.value !== exports) {
          keep(state.value)
        }
      }
      const fn = keep(context.getProp(exports, "default"))
      if (context.typeof(fn) !== "function") {
        return finish({
          ok: false,
          kind: "error",
          info: {
            name: "TypeError",
            message: "the code's default export is not a function: write `export default async (input, ctx) => output`",
            stack: ""
          }
        })
      }
      const run = keep(context.getProp(driver, "run"))
      const input = keep(context.newString(job.input))
      const called = context.callFunction(run, context.undefined, fn, input)
      if (called.error) {
        const info = readError(called.error)
        called.error.dispose()
        return finish({ ok: false, info })
      }
      called.value.dispose()
      pump()
    } catch (e) {
      finish({ ok: false, info: { name: "InternalError", message: String((e as Error)?.message ?? e), stack: "" } })
    }
  })
