import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { percentile } from "./support/load.js"
import { repoRoot, startNode, stopAll, tempDir } from "./support/processes.js"
import { fmt, machine, ratio, warnIfBusy } from "./support/report.js"

/**
 * The streamed invoke (issue 22), on one node, in one run: what a chat UI waits before the first text.
 *   - a model server speaking the OpenAI Responses API, generating `tokens` pieces of text `tokenMs` apart
 *     (as a real model does): unstreamed, it answers once all are generated; streamed (`stream: true`), it
 *     sends each as it is generated;
 *   - the same agent invoked `rounds` times each way, alternating: the synchronous invoke's latency (the whole
 *     answer), and the streamed invoke's time to the first `task.output.delta` and to the stream's end.
 * Ratios in the same run: first delta over the synchronous latency (what streaming saves the reader), and the
 * streamed end over the synchronous latency (what streaming costs the whole answer, ≈ 1).
 * Each run is appended to bench/results/streaming.json.
 */
export const name = "streaming"

const settings = { tokens: 40, tokenMs: 20, rounds: 20, warmup: 3 } as const

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A Responses API server whose model takes `tokenMs` per piece of text. */
const startModel = async () => {
  const pieces = Array.from({ length: settings.tokens }, (_, i) => `word${i} `)
  const text = pieces.join("")
  const response = {
    id: "resp_1",
    object: "response",
    status: "completed",
    model: "bench-model",
    output: [{
      type: "message",
      id: "msg_1",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text }]
    }],
    usage: { input_tokens: 20, output_tokens: settings.tokens, input_tokens_details: { cached_tokens: 0 } }
  }
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      if (body.stream !== true) {
        await sleep(settings.tokens * settings.tokenMs)
        res.writeHead(200, { "content-type": "application/json" })
        return res.end(JSON.stringify(response))
      }
      res.writeHead(200, { "content-type": "text/event-stream" })
      const event = (type: string, data: object) =>
        res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
      event("response.created", { response: { ...response, status: "in_progress", output: [] } })
      for (const delta of pieces) {
        await sleep(settings.tokenMs)
        event("response.output_text.delta", { output_index: 0, content_index: 0, delta })
      }
      event("response.completed", { response })
      res.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, close: () => server.close() }
}

/** A streamed invoke: ms to the first delta and to the end. */
const streamed = async (url: string, apiKey: string, body: string) => {
  const started = performance.now()
  const response = await fetch(url, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json", accept: "text/event-stream" },
    body
  })
  if (response.status !== 200) throw new Error(`streamed invoke: ${response.status} ${await response.text()}`)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let seen = ""
  let first: number | undefined
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    seen += decoder.decode(value, { stream: true })
    if (first === undefined && seen.includes("event: task.output.delta")) first = performance.now() - started
  }
  if (!seen.includes("event: task.completed")) throw new Error("the stream ended without task.completed")
  return { firstMs: first ?? Number.NaN, endMs: performance.now() - started }
}

const synchronous = async (url: string, apiKey: string, body: string) => {
  const started = performance.now()
  const response = await fetch(url, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body
  })
  const task = await response.json() as { status: string }
  if (task.status !== "completed") throw new Error(`sync invoke: ${JSON.stringify(task)}`)
  return performance.now() - started
}

export const run = async () => {
  warnIfBusy()
  const tmp = tempDir("bench-streaming-")
  const model = await startModel()
  try {
    const node = await startNode({
      dataDir: Path.join(tmp, "data"),
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true,
      env: { SWITCHYARD_OPENAI_BASE_URL: model.url, SWITCHYARD_OPENAI_API_KEY: "sk-bench" }
    })
    const apiKey = node.apiKey!
    const created = await fetch(`${node.baseUrl}/v1/agents`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({ name: "bench", model: { provider: "openai", name: "bench-model" } })
    })
    const agent = await created.json() as { id: string }
    const url = `${node.baseUrl}/v1/agents/${agent.id}/invoke`
    const body = JSON.stringify({ input: { text: "hi", user: { id: "u1", email: "u1@example.com" } } })

    const sync: Array<number> = []
    const first: Array<number> = []
    const end: Array<number> = []
    for (let i = 0; i < settings.warmup + settings.rounds; i++) {
      // alternating, which side first too: both see the same moments of a noisy machine
      let syncMs: number
      let stream: { firstMs: number; endMs: number }
      if (i % 2 === 0) {
        syncMs = await synchronous(url, apiKey, body)
        stream = await streamed(url, apiKey, body)
      } else {
        stream = await streamed(url, apiKey, body)
        syncMs = await synchronous(url, apiKey, body)
      }
      if (i < settings.warmup) continue
      sync.push(syncMs)
      first.push(stream.firstMs)
      end.push(stream.endMs)
    }
    const p50 = (xs: Array<number>) => percentile([...xs].sort((a, b) => a - b), 50)
    const result = {
      syncP50Ms: p50(sync),
      firstDeltaP50Ms: p50(first),
      streamedEndP50Ms: p50(end),
      modelMs: settings.tokens * settings.tokenMs,
      firstDeltaVsSync: ratio(p50(first), p50(sync)),
      streamedEndVsSync: ratio(p50(end), p50(sync))
    }
    console.log(
      `Model: ${settings.tokens} pieces, ${settings.tokenMs} ms apart (${result.modelMs} ms to generate)\n` +
        `  synchronous invoke      p50 ${fmt(result.syncP50Ms, 1)} ms\n` +
        `  streamed: first delta   p50 ${fmt(result.firstDeltaP50Ms, 1)} ms (${
          fmt(result.firstDeltaVsSync, 3)
        }x of synchronous)\n` +
        `  streamed: end of stream p50 ${fmt(result.streamedEndP50Ms, 1)} ms (${
          fmt(result.streamedEndVsSync, 3)
        }x of synchronous)`
    )
    await node.stop()
    const file = Path.join(repoRoot, "bench/results/streaming.json")
    const runs = Fs.existsSync(file) ? (JSON.parse(Fs.readFileSync(file, "utf8")) as Array<unknown>) : []
    runs.push({ benchmark: name, date: new Date().toISOString(), machine, settings, ...result })
    Fs.writeFileSync(file, JSON.stringify(runs, null, 2) + "\n")
    console.log(`\nResults appended to ${Path.relative(process.cwd(), file)}`)
    return { ok: true }
  } finally {
    model.close()
    await stopAll()
  }
}
