import { Cause, Chunk as Chunks, Effect, Queue, Schedule, Stream } from "effect"
import * as Crypto from "node:crypto"
import type { FileId } from "../../schema/Files.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { FileRepo } from "../files/FileRepo.js"
import { Files } from "../files/Files.js"
import { chunksOf } from "./Chunker.js"
import { makeExtractionThreads } from "./ExtractionThreads.js"
import { IngestQueue, type Job } from "./IngestQueue.js"
import { asUtf8, ExtractionFailed } from "./TextExtraction.js"

const LEASE_SECONDS = 60
const RENEW_EVERY = "20 seconds"
const IDLE_POLL = "1 second"
const CLAIM_BATCH = 4
const INSERT_BATCH = 500
const MAX_ATTEMPTS = 3
// progress is written at most this often, and not at all for a document read in less
const PROGRESS_EVERY_MS = 500

/**
 * Every node ingests documents: `SWITCHYARD_KNOWLEDGE_WORKERS` workers (default 2; 0 turns ingestion off on
 * the node) claim queued documents from PostgreSQL (IngestQueue), read them as their format, chunk them and
 * write the chunks, then mark them ready, or failed with a reason. A document added on this node wakes a
 * worker at once; others are found by polling every second. An unexpected failure is retried twice (10 s,
 * 20 s later) before the document fails `ingestion_failed`; a node stopping hands its documents back.
 */
export class Ingestion extends Effect.Service<Ingestion>()("knowledge/Ingestion", {
  scoped: Effect.gen(function*() {
    const queue = yield* IngestQueue
    const files = yield* Files
    const fileRepo = yield* FileRepo
    const { extractionTimeout, workers } = (yield* SwitchyardConfig).knowledge
    const threads = makeExtractionThreads(extractionTimeout)
    yield* Effect.addFinalizer(() => Effect.promise(threads.close))
    const signals = yield* Queue.dropping<void>(Math.max(1, workers))

    const bytesOf = (job: Job) =>
      Effect.gen(function*() {
        if (job.source_type !== "file") return job.data ?? undefined
        const row = yield* fileRepo.find(job.organization_id, job.source_file_id as FileId)
        if (row === undefined) return undefined
        // deleted while read: as if before
        const parts = yield* Stream.runCollect(files.content(row, 0, Number(row.size) - 1)).pipe(
          Effect.catchTag("NotFound", () => Effect.succeed(undefined))
        )
        if (parts === undefined) return undefined
        const bytes = Buffer.concat(Chunks.toArray(parts))
        return job.format === "pdf" ? bytes : asUtf8(bytes, row.content_type)
      })

    const ingest = (job: Job) =>
      Effect.gen(function*() {
        const started = Date.now()
        let written = 0
        const report = (fraction: number, chunks: number) => {
          const now = Date.now()
          if (now - started < PROGRESS_EVERY_MS || now - written < PROGRESS_EVERY_MS) return Effect.void
          written = now
          return queue.progress(job.id, Math.round(fraction * 1000) / 1000, chunks)
        }
        const bytes = yield* bytesOf(job)
        if (bytes === undefined) {
          return yield* queue.finish(job.id, {
            status: "error",
            reason: "file_gone",
            message: "The workspace file was deleted before the document was read."
          })
        }
        // extraction reports page by page (PDF); its progress is written from here, between pages
        let extracted = 0
        const blocks = yield* Effect.race(
          threads.extract(job.format, bytes, (f) => void (extracted = f)),
          Effect.suspend(() => report(extracted * 0.5, 0)).pipe(
            Effect.repeat(Schedule.spaced("250 millis")),
            Effect.zipRight(Effect.never)
          )
        )
        if (blocks instanceof ExtractionFailed) {
          return yield* queue.finish(job.id, { status: "error", reason: blocks.reason, message: blocks.message })
        }
        const chunks = chunksOf(blocks).map((c) => ({ ...c, id: Crypto.randomUUID() }))
        // an earlier attempt may have written some (the first has none to clear)
        if (job.attempts > 1) yield* queue.clearChunks(job.id)
        for (let at = 0; at < chunks.length; at += INSERT_BATCH) {
          yield* queue.insertChunks(job, chunks.slice(at, at + INSERT_BATCH))
          const done = Math.min(chunks.length, at + INSERT_BATCH)
          yield* report(0.5 + 0.5 * (done / chunks.length), done)
        }
        yield* queue.finish(job.id, { status: "ready", chunks: chunks.length })
      }).pipe(Effect.withSpan("Ingestion.ingest", {
        attributes: { document: job.id, format: job.format },
        captureStackTrace: false
      }))

    /** A failure nobody expected: retried later, until the last attempt fails the document. */
    const failed = (job: Job, cause: Cause.Cause<never>) =>
      Effect.gen(function*() {
        if (!(yield* queue.queued(job.id))) return // deleted while it was being read
        yield* Effect.logWarning(`knowledge document ${job.id}: ingestion attempt ${job.attempts} failed`, cause)
        if (job.attempts < MAX_ATTEMPTS) return yield* queue.release(job.id, 10 * job.attempts)
        yield* queue.finish(job.id, {
          status: "error",
          reason: "ingestion_failed",
          message: `Ingestion failed ${MAX_ATTEMPTS} times; add the document again with \`replaces\` set to ` +
            "this one's id, or ask an operator."
        })
      })

    const work = (jobs: ReadonlyArray<Job>) =>
      Effect.gen(function*() {
        const pending = new Set(jobs.map((j) => j.id))
        // the scope's end stops the renewal
        yield* Effect.suspend(() => queue.renew([...pending], LEASE_SECONDS)).pipe(
          Effect.repeat(Schedule.spaced(RENEW_EVERY)),
          Effect.delay(RENEW_EVERY),
          Effect.forkScoped
        )
        for (const job of jobs) {
          yield* ingest(job).pipe(
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : failed(job, cause)
            ),
            // a node that stops hands what it holds back to the queue
            Effect.onInterrupt(() => Effect.forEach([...pending], (id) => queue.release(id, 0)).pipe(Effect.ignore))
          )
          pending.delete(job.id)
        }
      }).pipe(Effect.scoped)

    const wakeAll = Queue.offerAll(signals, Array.from({ length: Math.max(1, workers) }, () => undefined))
    // idle, one worker polls (documents queued on a node without workers, retries, a dead node's leases) and
    // the rest wait for a document queued here, or for the poller to find more than it takes
    const worker = (polls: boolean) =>
      Effect.gen(function*() {
        const jobs = yield* queue.claim(CLAIM_BATCH, LEASE_SECONDS)
        if (polls && jobs.length === CLAIM_BATCH) yield* wakeAll
        if (jobs.length > 0) return yield* work(jobs)
        yield* polls ? Effect.race(Queue.take(signals), Effect.sleep(IDLE_POLL)) : Queue.take(signals)
      }).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause)
            : Effect.logWarning("knowledge ingestion: claim failed; trying again", cause).pipe(
              Effect.zipRight(Effect.sleep(IDLE_POLL))
            )
        ),
        Effect.forever
      )
    for (let i = 0; i < workers; i++) yield* Effect.forkScoped(worker(i === 0))

    return {
      /** A document was queued here: the idle workers take it now rather than at the next poll. */
      wake: Effect.asVoid(wakeAll)
    } as const
  }),
  dependencies: [IngestQueue.Default, Files.Default, FileRepo.Default]
}) {}
