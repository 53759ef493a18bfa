import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { Readable, Writable } from "node:stream"
import { pipeline } from "node:stream/promises"
import pg from "pg"
import { postgresOf, startNode, stopAll, tempDir } from "./support/processes.js"
import { fmt, ratio, warnIfBusy } from "./support/report.js"
import { appendToList } from "./support/runs.js"

/**
 * Workspace files (issue 25), on one node with its embedded PostgreSQL, in one run:
 *   - upload: a 100 MiB file streamed to `POST /v1/files` (raw body), against a bare Node stream copy of the
 *     same bytes into the same PostgreSQL (1 MiB `bytea` rows inserted with `pg` as they arrive, no HTTP);
 *   - download: `GET /v1/files/{id}/content` read to its end, against the bare copy read back row by row;
 *   - memory: the node's RSS sampled every 20 ms during each transfer; the peak above its RSS just before.
 * A warm-up round is not counted; then `rounds` rounds, each side first in turn. Throughputs are medians;
 * the ratio is the node's over the bare copy's. Each run is appended to bench/results/files.json.
 */
export const name = "files"

const MiB = 1024 * 1024
const settings = { fileBytes: 100 * MiB, chunkBytes: MiB, rounds: 3, rssSampleMs: 20 } as const

/** Informational targets, printed as PASS/MISS. */
const targets = { uploadRatio: 0.5, downloadRatio: 0.5, peakRssDeltaMiB: 64 } as const

/** The file: `fileBytes` of pseudo-random bytes, made 1 MiB at a time as it is read (never whole in memory). */
const source = () => {
  const block = Crypto.randomBytes(settings.chunkBytes)
  let made = 0
  return Readable.from(
    (function*() {
      while (made < settings.fileBytes) {
        const piece = Buffer.from(block)
        piece.writeUInt32BE(made / settings.chunkBytes, 0)
        made += piece.length
        yield piece
      }
    })(),
    { objectMode: false }
  )
}

const rssOf = (pid: number) => {
  const status = Fs.readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
}

/** Runs `transfer` while sampling the node's RSS: seconds taken and the peak RSS above the RSS before. */
const measured = async (pid: number, transfer: () => Promise<void>) => {
  const before = rssOf(pid)
  let peak = before
  const sampler = setInterval(() => void (peak = Math.max(peak, rssOf(pid))), settings.rssSampleMs)
  const started = performance.now()
  try {
    await transfer()
  } finally {
    clearInterval(sampler)
  }
  const seconds = (performance.now() - started) / 1000
  peak = Math.max(peak, rssOf(pid))
  return {
    seconds,
    mibPerSecond: settings.fileBytes / MiB / seconds,
    rssBeforeMiB: before / MiB,
    peakDeltaMiB: (peak - before) / MiB
  }
}

const upload = (baseUrl: string, apiKey: string, fileName: string) =>
  new Promise<{ id: string; sha256: string }>((resolve, reject) => {
    const url = new URL(`${baseUrl}/v1/files?name=${encodeURIComponent(fileName)}`)
    const request = Http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      method: "POST",
      headers: {
        "x-api-key": apiKey,
        "content-type": "application/octet-stream",
        "content-length": String(settings.fileBytes)
      }
    }, (response) => {
      let text = ""
      response.setEncoding("utf8")
      response.on("data", (c) => (text += c))
      response.on(
        "end",
        () =>
          response.statusCode === 201
            ? resolve(JSON.parse(text))
            : reject(new Error(`upload: ${response.statusCode} ${text}`))
      )
    })
    request.on("error", reject)
    source().pipe(request)
  })

const download = async (baseUrl: string, apiKey: string, fileId: string) => {
  const response = await fetch(`${baseUrl}/v1/files/${fileId}/content`, { headers: { "x-api-key": apiKey } })
  if (response.status !== 200) throw new Error(`download: ${response.status} ${await response.text()}`)
  const hash = Crypto.createHash("sha256")
  let size = 0
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    hash.update(chunk)
    size += chunk.length
  }
  return { size, sha256: hash.digest("hex") }
}

/** The baseline: the same bytes straight into 1 MiB rows of the same PostgreSQL, one insert in flight. */
const bareUpload = async (pool: pg.Pool, fileId: string) => {
  let start = 0
  let pending: Array<Buffer> = []
  let pendingBytes = 0
  await pipeline(
    source(),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        pending.push(chunk)
        pendingBytes += chunk.length
        if (pendingBytes < settings.chunkBytes) return done()
        const row = Buffer.concat(pending, pendingBytes)
        pending = []
        pendingBytes = 0
        const at = start
        start += row.length
        pool.query("INSERT INTO bench_chunks (file_id, start, data) VALUES ($1, $2, $3)", [fileId, at, row]).then(
          () => done(),
          done
        )
      },
      final(done) {
        if (pendingBytes === 0) return done()
        pool.query("INSERT INTO bench_chunks (file_id, start, data) VALUES ($1, $2, $3)", [
          fileId,
          start,
          Buffer.concat(pending, pendingBytes)
        ]).then(() => done(), done)
      }
    })
  )
}

const bareDownload = async (pool: pg.Pool, fileId: string) => {
  const hash = Crypto.createHash("sha256")
  let size = 0
  for (let start = 0; start < settings.fileBytes; start += settings.chunkBytes) {
    const { rows } = await pool.query<{ data: Buffer }>(
      "SELECT data FROM bench_chunks WHERE file_id = $1 AND start = $2",
      [fileId, start]
    )
    hash.update(rows[0]!.data)
    size += rows[0]!.data.length
  }
  return { size, sha256: hash.digest("hex") }
}

const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/** Appends this run to bench/results/files.json (an array of runs). */
const append = (run: Record<string, unknown>) => appendToList(name, settings, run)

export const run = async () => {
  const load = warnIfBusy()
  const tmp = tempDir("bench-files-")
  const dataDir = Path.join(tmp, "data")
  try {
    const node = await startNode({
      dataDir,
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true,
      env: { SWITCHYARD_MAX_FILE_BYTES: String(settings.fileBytes) }
    })
    const apiKey = node.apiKey!
    const pool = new pg.Pool({ ...postgresOf(dataDir), user: "postgres", database: "postgres", max: 2 })
    try {
      await pool.query(
        "CREATE TABLE bench_chunks (file_id text NOT NULL, start bigint NOT NULL, data bytea NOT NULL, PRIMARY KEY (file_id, start))"
      )
      await pool.query("ALTER TABLE bench_chunks ALTER COLUMN data SET STORAGE EXTERNAL")
      const rows: Array<Record<string, any>> = []
      for (let round = 0; round <= settings.rounds; round++) {
        const label = round === 0 ? "warm-up" : `round ${round}`
        const bareFirst = round % 2 === 1
        const result: Record<string, any> = { round }
        const viaNode = async () => {
          let file: { id: string; sha256: string } | undefined
          result.upload = await measured(
            node.pid,
            async () => void (file = await upload(node.baseUrl, apiKey, `bench/${round}.bin`))
          )
          let got: { size: number; sha256: string } | undefined
          result.download = await measured(
            node.pid,
            async () => void (got = await download(node.baseUrl, apiKey, file!.id))
          )
          if (got!.size !== settings.fileBytes || got!.sha256 !== file!.sha256) {
            throw new Error("download differs from upload")
          }
          const deleted = await fetch(`${node.baseUrl}/v1/files/${file!.id}`, {
            method: "DELETE",
            headers: { "x-api-key": apiKey }
          })
          if (deleted.status !== 204) throw new Error(`delete: ${deleted.status}`)
        }
        const bare = async () => {
          const id = `bare-${round}`
          let t0 = performance.now()
          await bareUpload(pool, id)
          result.bareUpload = { mibPerSecond: settings.fileBytes / MiB / ((performance.now() - t0) / 1000) }
          t0 = performance.now()
          const got = await bareDownload(pool, id)
          result.bareDownload = { mibPerSecond: settings.fileBytes / MiB / ((performance.now() - t0) / 1000) }
          if (got.size !== settings.fileBytes) throw new Error("bare copy differs")
          await pool.query("DELETE FROM bench_chunks WHERE file_id = $1", [id])
        }
        for (const step of bareFirst ? [bare, viaNode] : [viaNode, bare]) await step()
        console.log(
          `  ${label.padEnd(8)} upload ${fmt(result.upload.mibPerSecond, 1)} MiB/s (bare ${
            fmt(result.bareUpload.mibPerSecond, 1)
          }), download ${fmt(result.download.mibPerSecond, 1)} MiB/s (bare ${
            fmt(result.bareDownload.mibPerSecond, 1)
          }); ` +
            `node RSS +${fmt(result.upload.peakDeltaMiB, 1)} MiB uploading, +${
              fmt(result.download.peakDeltaMiB, 1)
            } MiB ` +
            `downloading (from ${fmt(result.upload.rssBeforeMiB, 0)} MiB)`
        )
        if (round > 0) rows.push(result)
      }
      const summary = {
        uploadMiBps: median(rows.map((r) => r.upload.mibPerSecond)),
        bareUploadMiBps: median(rows.map((r) => r.bareUpload.mibPerSecond)),
        downloadMiBps: median(rows.map((r) => r.download.mibPerSecond)),
        bareDownloadMiBps: median(rows.map((r) => r.bareDownload.mibPerSecond)),
        peakRssDeltaUploadMiB: Math.max(...rows.map((r) => r.upload.peakDeltaMiB)),
        peakRssDeltaDownloadMiB: Math.max(...rows.map((r) => r.download.peakDeltaMiB))
      }
      const uploadRatio = ratio(summary.uploadMiBps, summary.bareUploadMiBps)
      const downloadRatio = ratio(summary.downloadMiBps, summary.bareDownloadMiBps)
      const peak = Math.max(summary.peakRssDeltaUploadMiB, summary.peakRssDeltaDownloadMiB)
      console.log(
        `\nUpload ${fmt(summary.uploadMiBps, 1)} MiB/s vs bare ${fmt(summary.bareUploadMiBps, 1)} MiB/s: ${
          fmt(uploadRatio, 2)
        }x — target ≥ ${targets.uploadRatio}x: ${uploadRatio >= targets.uploadRatio ? "PASS" : "MISS"}`
      )
      console.log(
        `Download ${fmt(summary.downloadMiBps, 1)} MiB/s vs bare ${fmt(summary.bareDownloadMiBps, 1)} MiB/s: ${
          fmt(downloadRatio, 2)
        }x — target ≥ ${targets.downloadRatio}x: ${downloadRatio >= targets.downloadRatio ? "PASS" : "MISS"}`
      )
      console.log(
        `Node RSS peak above its level before a transfer: ${fmt(peak, 1)} MiB for a ${
          settings.fileBytes / MiB
        } MiB file — target ≤ ${targets.peakRssDeltaMiB} MiB: ${peak <= targets.peakRssDeltaMiB ? "PASS" : "MISS"}`
      )
      append({ ok: true, loadBefore: load, summary, uploadRatio, downloadRatio, rounds: rows, targets })
      return { ok: true }
    } finally {
      await pool.end()
      await node.stop()
    }
  } finally {
    await stopAll()
    Fs.rmSync(tmp, { recursive: true, force: true })
  }
}
