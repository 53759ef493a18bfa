import ReleaseSync from "@jitl/quickjs-wasmfile-release-sync"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import { parentPort } from "node:worker_threads"
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSSyncVariant,
  type QuickJSWASMModule
} from "quickjs-emscripten-core"
import { compile, type InputValidator } from "../../connectors/openapi/InputValidator.js"
import { lowerThreadPriority } from "../../support/ThreadPriority.js"
import type { FromWorker, SandboxJob, SandboxOutcome, ToWorker } from "./SandboxProtocol.js"
import { type HostReply, runInSandbox } from "./SandboxRun.js"

/**
 * A sandbox worker thread: runs functions in QuickJS (WebAssembly), each call in a fresh runtime. The
 * node's event loop never runs a function's code, so a function that spins only costs its own worker.
 *
 * Memory: QuickJS's own limit counts allocations but not their sizes in this build (quickjs-emscripten
 * #271), so each module gets a WebAssembly memory whose `maximum` is the cap: past it, malloc fails and
 * QuickJS throws "out of memory" in the function. A module is leased to one call at a time, so the cap is
 * that call's; modules are kept per cap and reused (a fresh runtime each call).
 */

const PAGE = 64 * 1024
/** The module's first 16 MiB (its minimum); about 12 MiB of them are free heap. */
const INITIAL_PAGES = 256
const FREE_IN_INITIAL_MB = 12
/** A module whose memory grew past this is dropped after its call, so the worker gives the memory back. */
const KEEP_BELOW_BYTES = 40 * 1024 * 1024
const MAX_IDLE_MODULES = 4

// below the node's own threads: a function spinning until its timeout yields the CPU to the node's requests
lowerThreadPriority()

const port = parentPort!
const send = (message: FromWorker) => port.postMessage(message)

// a CommonJS package: under NodeNext its default import is the whole module, whose `default` is the variant
const variant = ((ReleaseSync as { default?: QuickJSSyncVariant }).default ?? ReleaseSync) as QuickJSSyncVariant

const require = createRequire(import.meta.url)
const wasm = WebAssembly.compile(Fs.readFileSync(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm")))

const idle = new Map<number, Array<QuickJSWASMModule>>()
let idleCount = 0

const growthPages = (memoryMb: number) => Math.max(0, memoryMb - FREE_IN_INITIAL_MB) * (1024 * 1024 / PAGE)

const makeModule = async (memoryMb: number) => {
  const growth = growthPages(memoryMb)
  const memory = new WebAssembly.Memory({ initial: INITIAL_PAGES, maximum: INITIAL_PAGES + growth })
  return newQuickJSWASMModuleFromVariant(newVariant(variant, {
    wasmModule: await wasm,
    wasmMemory: memory,
    // QuickJS reports a failed clean-up after an interrupt on stderr; the module is dropped then anyway
    emscriptenModule: { printErr: () => {}, print: () => {} } as never
  }))
}

const lease = (memoryMb: number) => {
  const free = idle.get(memoryMb)
  const module = free?.pop()
  if (module !== undefined) {
    idleCount--
    return Promise.resolve(module)
  }
  return makeModule(memoryMb)
}

const giveBack = (memoryMb: number, module: QuickJSWASMModule) => {
  if (module.getWasmMemory().buffer.byteLength > KEEP_BELOW_BYTES || idleCount >= MAX_IDLE_MODULES) return
  const free = idle.get(memoryMb) ?? []
  free.push(module)
  idle.set(memoryMb, free)
  idleCount++
}

// compiled input schemas by their text: a version's schema never changes, so its text is its identity
const validators = new Map<string, InputValidator>()
const MAX_VALIDATORS = 200

/**
 * The input checked against the function's schema, here and not on the node's event loop: a schema's
 * `pattern` is a regular expression the function's author wrote, and a catastrophic one only stalls this
 * worker (which the node terminates past the call's timeout).
 */
const checkInput = (job: SandboxJob): SandboxOutcome | undefined => {
  let validate = validators.get(job.schema)
  if (validate === undefined) {
    try {
      validate = compile(JSON.parse(job.schema) as object)
    } catch (e) {
      return {
        ok: false,
        kind: "error",
        message: `The function's input_schema cannot be used: ${String(e)}`,
        logs: [],
        logsTruncated: false
      }
    }
    if (validators.size >= MAX_VALIDATORS) validators.delete(validators.keys().next().value!)
    validators.set(job.schema, validate)
  }
  const checked = validate(JSON.parse(job.input))
  if (checked.ok) return undefined
  const issues = checked.issues.map((i) => ({
    path: i.path === "" ? "input" : `input.${i.path}`,
    message: i.message.startsWith("is not allowed") ? "is not allowed" : i.message
  }))
  const first = issues[0]!
  return {
    ok: false,
    kind: "invalid_input",
    message: `\`${first.path}\`: ${first.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ""}`,
    issues,
    logs: [],
    logsTruncated: false
  }
}

const waiting = new Map<string, (reply: HostReply) => void>()
const cancels = new Map<number, () => void>()
let nextCall = 0

const run = async (id: number, job: SandboxJob, deadline: number) => {
  const refused = checkInput(job)
  if (refused !== undefined) return send({ type: "done", id, outcome: refused })
  const module = await lease(job.memoryMb)
  const host = (op: string, args: string) =>
    new Promise<HostReply>((resolve) => {
      const callId = ++nextCall
      waiting.set(`${id}:${callId}`, resolve)
      send({ type: "host", id, callId, op, args })
    })
  const capBytes = (INITIAL_PAGES + growthPages(job.memoryMb)) * PAGE
  const { outcome, poisoned } = await runInSandbox(
    module,
    job,
    deadline,
    host,
    (cancel) => cancels.set(id, cancel),
    () => module.getWasmMemory().buffer.byteLength >= capBytes - 1024 * 1024
  )
  cancels.delete(id)
  for (const key of waiting.keys()) if (key.startsWith(`${id}:`)) waiting.delete(key)
  if (!poisoned) giveBack(job.memoryMb, module)
  send({ type: "done", id, outcome })
}

port.on("message", (message: ToWorker) => {
  switch (message.type) {
    case "run":
      run(message.id, message.job, message.deadline).catch((e) =>
        send({
          type: "done",
          id: message.id,
          outcome: {
            ok: false,
            kind: "error",
            message: `The sandbox failed: ${String(e)}`,
            logs: [],
            logsTruncated: false
          }
        })
      )
      return
    case "host_result": {
      const key = `${message.id}:${message.callId}`
      const resolve = waiting.get(key)
      waiting.delete(key)
      resolve?.(
        message.ok ? { ok: true, value: message.value ?? "null" } : { ok: false, error: message.error! }
      )
      return
    }
    case "cancel":
      cancels.get(message.id)?.()
      return
  }
})

// warm: the first call finds a module ready
void lease(32).then((module) => {
  giveBack(32, module)
  send({ type: "ready" })
})
