import { Effect, Fiber, Stream } from "effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import { eventStreamResponse, makeHeartbeats } from "../../src/events/EventStreamResponse.js"
import { Drain } from "../../src/http/Drain.js"

afterEach(() => {
  vi.useRealTimers()
})

describe("event stream heartbeats", () => {
  it("one timer beats each stream once per period, a bucket of them each second, never all at once", () => {
    vi.useFakeTimers()
    const beat = makeHeartbeats(15)
    const counts = Array.from({ length: 45 }, () => 0)
    const stops = counts.map((_, i) => beat(() => counts[i]!++))
    const perSecond: Array<number> = []
    for (let s = 0; s < 15; s++) {
      const before = counts.reduce((a, b) => a + b, 0)
      vi.advanceTimersByTime(1000)
      perSecond.push(counts.reduce((a, b) => a + b, 0) - before)
    }
    expect(counts.every((n) => n === 1)).toBe(true)
    expect(perSecond.every((n) => n === 3)).toBe(true)
    // a stream that stops gets no more beats; the others go on
    stops[0]!()
    vi.advanceTimersByTime(15_000)
    expect(counts[0]).toBe(1)
    expect(counts[1]).toBe(2)
    for (const stop of stops) stop()
    expect(vi.getTimerCount()).toBe(0)
  })

  it("an open stream ends as soon as its node begins to drain", async () => {
    const program = Effect.gen(function*() {
      const drain = yield* Drain
      const response = eventStreamResponse(drain, Stream.never)
      if (response.body._tag !== "Stream") throw new Error("not a stream")
      const body = yield* Effect.fork(Stream.runCollect(Stream.decodeText(response.body.stream)))
      yield* Effect.sleep("50 millis")
      yield* drain.begin
      const parts = yield* Fiber.join(body).pipe(Effect.timeout("2 seconds"))
      expect([...parts].join("")).toBe("retry: 2000\n\n")
      // a stream opened while draining ends at once
      const late = eventStreamResponse(drain, Stream.never)
      if (late.body._tag !== "Stream") throw new Error("not a stream")
      yield* Stream.runDrain(late.body.stream).pipe(Effect.timeout("2 seconds"))
    })
    await Effect.runPromise(program.pipe(Effect.provide(Drain.Default)))
  })
})
