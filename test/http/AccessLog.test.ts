import { Effect, Logger, LogLevel } from "effect"
import { describe, expect, it } from "vitest"
import { type AccessLine, accessLineJson, makeAccessLog, nodeLogger } from "../../src/http/AccessLog.js"

/** What the node writes to stderr (directly, or by console.error) while `f` runs and the event-loop turn after. */
const stderrOf = async (f: () => Promise<unknown>) => {
  const lines: Array<string> = []
  const take = (chunk: unknown) => void lines.push(...String(chunk).split("\n").filter((l) => l !== ""))
  const write = process.stderr.write
  const error = console.error
  process.stderr.write = ((chunk: string | Uint8Array) => (take(chunk), true)) as typeof process.stderr.write
  console.error = take
  try {
    await f()
    await new Promise((resolve) => setImmediate(resolve))
  } finally {
    process.stderr.write = write
    console.error = error
  }
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>)
}

const asNode = <A>(effect: Effect.Effect<A>) =>
  effect.pipe(
    Effect.provide(Logger.replace(Logger.defaultLogger, nodeLogger)),
    Logger.withMinimumLogLevel(LogLevel.Info),
    Effect.runPromise
  )

const fields = {
  method: "POST",
  url: "/v1/tools/connectors/_/connections/x/getItem?secret=1",
  status: 200,
  request_id: "req-1",
  organization_id: "org-1",
  fast_path: true
} as const

describe("the access log written directly", () => {
  it("is the line the node's JSON logger writes for the same request, without a fiber id", async () => {
    const started = performance.now()
    const [direct] = await stderrOf(async () => {
      const log = await asNode(makeAccessLog)
      log!({ ...fields, started })
    })
    const [viaEffect] = await stderrOf(() =>
      asNode(
        Effect.logInfo("http").pipe(Effect.annotateLogs({
          method: "POST",
          path: "/v1/tools/connectors/_/connections/x/getItem",
          status: 200,
          latency_ms: (direct!["annotations"] as any).latency_ms,
          request_id: "req-1",
          organization_id: "org-1",
          fast_path: true
        }))
      )
    )
    const { fiberId, timestamp: _, ...expected } = viaEffect!
    expect(typeof fiberId).toBe("string")
    const { timestamp, ...got } = direct!
    expect(got).toEqual(expected)
    expect(new Date(timestamp as string).toISOString()).toBe(timestamp)
    // the query string stays out of the log
    expect(JSON.stringify(direct)).not.toContain("secret")
  })

  it("writes nothing above Info, and goes through Effect's logger when another logger is installed", async () => {
    const quiet = await stderrOf(async () => {
      const log = await makeAccessLog.pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, nodeLogger)),
        Logger.withMinimumLogLevel(LogLevel.Warning),
        Effect.runPromise
      )
      expect(log).toBeUndefined()
    })
    expect(quiet).toEqual([])
    const seen: Array<unknown> = []
    const log = await makeAccessLog.pipe(
      Effect.provide(Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void seen.push(message)))),
      Logger.withMinimumLogLevel(LogLevel.Info),
      Effect.runPromise
    )
    log!({ ...fields, started: performance.now() })
    expect(seen).toEqual([["http"]])
  })

  it("writes each line as JSON.stringify and toISOString would, whatever the request sent", () => {
    const odd = ["a\"b", "back\\slash", "tab\there", "new\nline", "é ü", "\u2028", "\u0000", "💡", "", "plain-1"]
    const times = [0, 999, 1000, 1764312345007, 1764312345070, 1764312345700, 1764312346000, Date.now()]
    for (const [i, text] of odd.entries()) {
      const line: AccessLine = {
        ...(i % 2 === 0 ? { method: text } : { method: undefined }),
        path: `/v1/${text}`,
        status: 200 + i,
        latency_ms: i / 7,
        request_id: text,
        ...(i % 3 === 0 ? {} : { organization_id: text }),
        ...(i % 2 === 0 ? { fast_path: true as const } : {}),
        ...(i % 4 === 0 ? {} : { trace_id: text, span_id: text })
      }
      for (const at of times) {
        const written = accessLineJson(line, at)
        expect(written).toBe(
          `{"message":"http","logLevel":"INFO","timestamp":"${new Date(at).toISOString()}","annotations":${
            JSON.stringify(line)
          },"spans":{}}`
        )
        expect(JSON.parse(written).annotations).toEqual(JSON.parse(JSON.stringify(line)))
      }
    }
  })
})
