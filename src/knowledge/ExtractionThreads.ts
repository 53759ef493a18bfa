import { Duration, Effect } from "effect"
import { Worker } from "node:worker_threads"
import type { DocumentFormat } from "../../schema/KnowledgeBases.js"
import type { Block } from "./Chunker.js"
import type { FromExtraction } from "./extraction/ExtractionProtocol.js"
import { ExtractionFailed } from "./TextExtraction.js"

// the worker's JS heap: pdf.js keeps a document's objects there; past it the worker dies, not the node
const WORKER_HEAP_MB = 512
const IDLE_WORKER_MS = 30_000

/**
 * Documents are read on worker threads (extraction/ExtractionWorker.ts), one document per thread at a time:
 * a thread is taken from the idle ones or started, and given back when the document is read. A document
 * that takes longer than `timeout`, or whose thread runs out of memory or dies, fails `extraction_failed`
 * with what happened, and its thread is terminated (a thread never serves two documents at once, so nothing
 * else is lost with it). A thread idle for 30 s ends; threads never keep the process alive.
 */
export const makeExtractionThreads = (timeout: Duration.Duration) => {
  const timeoutMs = Duration.toMillis(timeout)
  const idle: Array<{
    readonly worker: Worker
    readonly timer: ReturnType<typeof setTimeout>
    /** Ends it: its idle time ran out, or it failed or stopped while idle. */
    readonly gone: () => void
  }> = []
  const running = new Set<Worker>()

  const take = () => {
    const kept = idle.at(-1)?.worker
    if (kept !== undefined) {
      drop(kept)
      return kept
    }
    const worker = new Worker(new URL("./extraction/worker.mjs", import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
      stdout: false,
      stderr: false
    })
    worker.unref()
    return worker
  }

  /** Takes `worker` out of the idle ones, if it is one (never another: `splice(-1, 1)` would drop the last). */
  const drop = (worker: Worker) => {
    const at = idle.findIndex((k) => k.worker === worker)
    if (at === -1) return
    const [kept] = idle.splice(at, 1)
    clearTimeout(kept!.timer)
    worker.off("error", kept!.gone).off("exit", kept!.gone)
  }

  const giveBack = (worker: Worker) => {
    // a thread that fails or stops while idle is dropped, not handed the next document; and an `error` event
    // with no listener would be thrown in the node's main thread
    const gone = () => {
      drop(worker)
      void worker.terminate()
    }
    const timer = setTimeout(gone, IDLE_WORKER_MS)
    timer.unref()
    worker.on("error", gone).on("exit", gone)
    idle.push({ worker, timer, gone })
  }

  const failure = (message: string) => new ExtractionFailed("extraction_failed", message)

  /** The blocks of a document of `format`, read on a worker thread; `onProgress` as extractBlocks's. */
  const extract = (format: DocumentFormat, bytes: Uint8Array, onProgress: (fraction: number) => void) =>
    Effect.async<Array<Block> | ExtractionFailed>((resume) => {
      const worker = take()
      running.add(worker)
      let settled = false
      const end = (result: Array<Block> | ExtractionFailed | undefined, reusable: boolean) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        worker.off("message", onMessage).off("error", onError).off("exit", onExit)
        running.delete(worker)
        if (reusable) giveBack(worker)
        else void worker.terminate()
        if (result !== undefined) resume(Effect.succeed(result))
      }
      const onMessage = (message: FromExtraction) => {
        if ("progress" in message) return onProgress(message.progress)
        end(
          "blocks" in message ? message.blocks : new ExtractionFailed(message.failed.reason, message.failed.message),
          true
        )
      }
      const onError = (e: Error & { code?: string }) =>
        end(
          failure(
            e.code === "ERR_WORKER_OUT_OF_MEMORY"
              ? `Reading the document needed more than ${WORKER_HEAP_MB} MiB of memory.`
              : `Reading the document failed: ${String(e.message ?? e).replace(/\.+$/, "")}.`
          ),
          false
        )
      const onExit = (code: number) =>
        end(failure(`The thread reading the document stopped (exit code ${code}).`), false)
      const timer = setTimeout(
        () =>
          end(
            failure(
              `Reading the document took longer than ${Duration.format(timeout)} ` +
                "(SWITCHYARD_KNOWLEDGE_EXTRACTION_TIMEOUT)."
            ),
            false
          ),
        timeoutMs
      )
      worker.on("message", onMessage).on("error", onError).on("exit", onExit)
      // a copy of its own, transferred (a Buffer's slice is a view, not a copy: it would detach the caller's)
      const own = new Uint8Array(bytes)
      worker.postMessage({ format, bytes: own }, [own.buffer])
      // interrupted (the node stops): the thread is stopped with what it reads
      return Effect.sync(() => end(undefined, false))
    })

  const close = () => {
    const idleWorkers = idle.map((k) => k.worker)
    idleWorkers.forEach(drop)
    return Promise.all([...idleWorkers, ...running].map((w) => w.terminate()))
  }

  return { extract, close } as const
}
