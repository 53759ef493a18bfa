import { parentPort } from "node:worker_threads"
import { lowerThreadPriority } from "../../support/ThreadPriority.js"
import { extractBlocks, ExtractionFailed } from "../TextExtraction.js"
import type { ExtractionJob, FromExtraction } from "./ExtractionProtocol.js"

/**
 * An extraction worker thread: reads one document at a time (ExtractionThreads hands it one and waits), so
 * pdf.js and the HTML parser never hold the node's event loop (a 400-page PDF held it up to ~0.3 s at a time).
 */
lowerThreadPriority()

const port = parentPort!
const send = (message: FromExtraction) => port.postMessage(message)

port.on("message", async (job: ExtractionJob) => {
  const result = await extractBlocks(job.format, job.bytes, (progress) => send({ progress }))
  send(
    result instanceof ExtractionFailed
      ? { failed: { reason: result.reason, message: result.message } }
      : { blocks: result }
  )
})
