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

/** The longest start of `text` that is at most `bytes` in UTF-8, never half a character. */
const utf8Head = (text: string, bytes: number): string => {
  if (text.length * 3 <= bytes) return text
  const encoded = Buffer.from(text, "utf8")
  if (encoded.length <= bytes) return text
  let end = bytes
  // back off continuation bytes (10xxxxxx) to the start of the character cut across
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end--
  return encoded.subarray(0, end).toString("utf8")
}

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

interface ErrorInfo {
  readonly name: string
  readonly message: string
  readonly stack: string
}

const MAX_THROWN_CHARS = 200

/** A thrown value that is not an error (`throw {code: 1}`), as its message shows it: its JSON, cut. */
const thrownValue = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > MAX_THROWN_CHARS ? `${text.slice(0, MAX_THROWN_CHARS)}…` : text
}

const stackOf = (stack: string) =>
  stack.split("\n").map((l) => l.trim()).filter((l) => l.includes(FILE_NAME)).slice(0, MAX_STACK_LINES).join("\n")

/** Runs one call of a function in a fresh runtime and context of `module`: no state survives the call. */
export const runInSandbox = (
  module: QuickJSWASMModule,
  job: SandboxJob,
  /** `Date.now()` at which the call is over (the node's: queue wait counts). */
  deadline: number,
  host: HostCall,
  onCancel: (cancel: () => void) => void,
  /** Whether the module's memory is (nearly) at its cap: QuickJS throws `null` when it cannot even make an error. */
  memoryFull: () => boolean = () => false
): Promise<RunResult> =>
  new Promise<RunResult>((resolveRun) => {
    const logs: Array<string> = []
    let logBytes = 0
    let logsTruncated = false
    let finished = false
    let cancelled = false
    let hostCalls = 0
    const pending = new Set<QuickJSDeferredPromise>()
    const handles: Array<QuickJSHandle> = []

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
        const o = d !== null && typeof d === "object" ? d as Record<string, unknown> : undefined
        if (typeof o?.message === "string") {
          return { name: String(o.name ?? "Error"), message: o.message, stack: String(o.stack ?? "") }
        }
        return { name: "Error", message: `the function threw ${thrownValue(d)}`, stack: "" }
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

    function finish(r: { ok: true; output: string } | { ok: false; info: ErrorInfo; kind?: FailureKind }) {
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

    // intrinsics as they are before the function's code runs: a function that replaces JSON.stringify or
    // Object.freeze changes nothing the host relies on
    const json = keep(context.getProp(context.global, "JSON"))
    const stringifyFn = keep(context.getProp(json, "stringify"))
    const parseFn = keep(context.getProp(json, "parse"))
    const objectCtor = keep(context.getProp(context.global, "Object"))
    const freezeFn = keep(context.getProp(objectCtor, "freeze"))

    const stringCtor = keep(context.getProp(context.global, "String"))
    const stringProto = keep(context.getProp(stringCtor, "prototype"))
    const sliceFn = keep(context.getProp(stringProto, "slice"))
    const zero = keep(context.newNumber(0))
    const lineChars = keep(context.newNumber(MAX_LOG_LINE))
    /** The first MAX_LOG_LINE characters of a VM string, copied out without the rest of it. */
    const lineHead = (h: QuickJSHandle): string => {
      const r = context.callFunction(sliceFn, h, zero, lineChars)
      if (r.error) {
        r.error.dispose()
        return ""
      }
      try {
        return context.getString(r.value)
      } finally {
        r.value.dispose()
      }
    }

    const lengthOf = (h: QuickJSHandle) => {
      const length = context.getProp(h, "length")
      try {
        return context.getNumber(length)
      } finally {
        length.dispose()
      }
    }

    type Encoded =
      | { ok: true; text: string | undefined; length: number; head?: string }
      | { ok: false; error: QuickJSHandle }
    /**
     * A VM value as JSON text (undefined when it has none, or it is longer than `maxLength`: then `head`, its
     * start, if asked for), or the VM's own error (a cycle, a throwing toJSON).
     */
    const encode = (h: QuickJSHandle, maxLength: number, withHead = false): Encoded => {
      const r = context.callFunction(stringifyFn, context.undefined, h)
      if (r.error) return { ok: false, error: r.error }
      try {
        if (context.typeof(r.value) !== "string") return { ok: true, text: undefined, length: 0 }
        const length = lengthOf(r.value)
        if (length <= maxLength) return { ok: true, text: context.getString(r.value), length }
        return { ok: true, text: undefined, length, ...(withHead ? { head: lineHead(r.value) } : {}) }
      } finally {
        r.value.dispose()
      }
    }

    const logFn = keep(context.newFunction("log", (...values) => {
      if (logs.length >= MAX_LOG_LINES || logBytes >= MAX_LOG_BYTES) {
        logsTruncated = true
        return
      }
      // a value too long for a line gives its start (copied out of the VM alone), and the line is cut
      let cut = false
      const parts = values.map((v) => {
        if (context.typeof(v) === "string") {
          if (lengthOf(v) <= MAX_LOG_LINE) return context.getString(v)
          cut = true
          return lineHead(v)
        }
        const e = encode(v, MAX_LOG_LINE, true)
        if (!e.ok) {
          e.error.dispose()
          return "[unprintable]"
        }
        if (e.head !== undefined) cut = true
        return e.text ?? e.head ?? `[${context.typeof(v)}]`
      })
      const joined = parts.join(" ")
      const line = cut || Buffer.byteLength(joined) > MAX_LOG_LINE ? `${utf8Head(joined, MAX_LOG_LINE - 3)}…` : joined
      if (line !== joined) logsTruncated = true
      logBytes += Buffer.byteLength(line)
      logs.push(line)
    }))

    const rejectWith = (deferred: QuickJSDeferredPromise, failure: HostFailure) => {
      const error = context.newError({ name: "CapabilityError", message: failure.message })
      const code = context.newString(failure.code)
      context.setProp(error, "code", code)
      code.dispose()
      if (failure.status !== undefined) {
        const status = context.newNumber(failure.status)
        context.setProp(error, "status", status)
        status.dispose()
      }
      deferred.reject(error)
      error.dispose()
    }

    /** A `ctx` method: its arguments as JSON fields, sent to the host; resolves to the answer parsed in the VM. */
    const capability = (op: string, fields: ReadonlyArray<string>) =>
      keep(context.newFunction(op, (...args) => {
        const deferred = context.newPromise()
        const parts: Array<string> = []
        for (let i = 0; i < fields.length; i++) {
          const arg = args[i]
          if (arg === undefined || context.typeof(arg) === "undefined") continue
          const e = encode(arg, MAX_HOST_ARGS_BYTES)
          if (!e.ok) {
            deferred.reject(e.error)
            e.error.dispose()
            return deferred.handle
          }
          if (e.text === undefined && e.length > 0) {
            rejectWith(deferred, {
              code: "payload_too_large",
              message: `ctx call arguments are capped at ${MAX_HOST_ARGS_BYTES} bytes`
            })
            return deferred.handle
          }
          if (e.text !== undefined) parts.push(`${JSON.stringify(fields[i])}:${e.text}`)
        }
        if (++hostCalls > MAX_HOST_CALLS) {
          rejectWith(deferred, {
            code: "rate_limited",
            message: `a function makes at most ${MAX_HOST_CALLS} ctx calls`
          })
          return deferred.handle
        }
        pending.add(deferred)
        host(op, `{${parts.join(",")}}`).then(
          (reply) => {
            if (finished) return
            pending.delete(deferred)
            try {
              if (reply.ok) {
                const text = context.newString(reply.value)
                const parsed = context.callFunction(parseFn, context.undefined, text)
                text.dispose()
                if (parsed.error) {
                  deferred.reject(parsed.error)
                  parsed.error.dispose()
                } else {
                  deferred.resolve(parsed.value)
                  parsed.value.dispose()
                }
              } else {
                rejectWith(deferred, reply.error)
              }
            } catch (e) {
              return finish({ ok: false, info: { name: "InternalError", message: String(e), stack: "" } })
            }
            pump()
          },
          () => {
            if (finished) return
            pending.delete(deferred)
            rejectWith(deferred, { code: "internal_error", message: "the call failed" })
            pump()
          }
        )
        return deferred.handle
      }))

    /** A frozen object of the given members, made by the host: nothing of it is the function's to change. */
    const frozen = (members: Record<string, QuickJSHandle>) => {
      const object = keep(context.newObject())
      for (const [key, value] of Object.entries(members)) context.setProp(object, key, value)
      const done = context.callFunction(freezeFn, context.undefined, object)
      if (done.error) done.error.dispose()
      else done.value.dispose()
      return object
    }

    let resultPromise: QuickJSHandle | undefined

    /** The function's result, once its promise settled: its output encoded, or its error. */
    const settle = () => {
      if (resultPromise === undefined) return false
      const state = context.getPromiseState(resultPromise)
      if (state.type === "pending") return false
      if (state.type === "rejected") {
        const info = readError(state.error)
        state.error.dispose()
        finish({ ok: false, info })
        return true
      }
      const e = encode(state.value, job.maxOutputBytes)
      if (state.notAPromise !== true) state.value.dispose()
      if (!e.ok) {
        const info = readError(e.error)
        e.error.dispose()
        finish({ ok: false, info })
      } else if (e.text === undefined && e.length > 0) {
        finish({
          ok: false,
          kind: "output_too_large",
          info: {
            name: "Error",
            message: `The function's output is ${e.length} characters of JSON; the cap is ${job.maxOutputBytes} bytes.`,
            stack: ""
          }
        })
      } else {
        const output = e.text ?? "null"
        const bytes = Buffer.byteLength(output)
        finish(
          bytes > job.maxOutputBytes
            ? {
              ok: false,
              kind: "output_too_large",
              info: {
                name: "Error",
                message: `The function's output is ${bytes} bytes of JSON; the cap is ${job.maxOutputBytes} bytes.`,
                stack: ""
              }
            }
            : { ok: true, output }
        )
      }
      return true
    }

    /** Runs the function's pending jobs until it is done or waits for the host. */
    const pump = () => {
      try {
        while (!finished) {
          if (settle()) return
          const r = runtime.executePendingJobs(1000)
          if (r.error) {
            const info = readError(r.error)
            r.error.dispose()
            return finish({ ok: false, info })
          }
          if (settle()) return
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
      const ctx = frozen({
        log: logFn,
        connectors: frozen({ invoke: capability("connectors.invoke", ["connection_id", "operation_id", "params"]) }),
        files: frozen({
          list: capability("files.list", ["prefix", "cursor"]),
          read: capability("files.read", ["name", "offset"]),
          write: capability("files.write", ["name", "text"])
        })
      })

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
      if (job.loadOnly === true) return finish({ ok: true, output: "null" })
      const inputText = keep(context.newString(job.input))
      const input = context.callFunction(parseFn, context.undefined, inputText)
      if (input.error) {
        const info = readError(input.error)
        input.error.dispose()
        return finish({ ok: false, info })
      }
      keep(input.value)
      const called = context.callFunction(fn, context.undefined, input.value, ctx)
      if (called.error) {
        const info = readError(called.error)
        called.error.dispose()
        return finish({ ok: false, info })
      }
      resultPromise = keep(called.value)
      pump()
    } catch (e) {
      finish({ ok: false, info: { name: "InternalError", message: String((e as Error)?.message ?? e), stack: "" } })
    }
  })
