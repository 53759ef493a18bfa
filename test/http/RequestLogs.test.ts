import { HttpLayerRouter, HttpServerResponse } from "@effect/platform"
import { ConfigProvider, Effect, HashMap, Layer, Logger, LogLevel } from "effect"
import { describe, expect, it } from "vitest"
import { SwitchyardConfig } from "../../src/config/SwitchyardConfig.js"
import { Drain } from "../../src/http/Drain.js"
import { RequestPipelineLive, unexpectedFailure } from "../../src/http/RequestPipeline.js"
import { RouteTable } from "../../src/http/RouteTable.js"

interface Line {
  readonly message: string
  readonly requestId: unknown
}

const capture = (lines: Array<Line>) =>
  Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ annotations, message }) =>
      void lines.push({
        message: String(message),
        requestId: HashMap.get(annotations, "request_id").pipe((o) => o._tag === "Some" ? o.value : undefined)
      })
    )
  )

describe("request ids in logs", () => {
  it("every line logged while a request runs, and its unhandled error, carry the request id it answers with", async () => {
    const lines: Array<Line> = []
    const failing = HttpLayerRouter.add(
      "GET",
      "/v1/fails",
      Effect.logWarning("about to fail").pipe(
        Effect.zipRight(Effect.die(new Error("boom"))),
        Effect.as(HttpServerResponse.empty())
      )
    )
    const { dispose, handler } = HttpLayerRouter.toWebHandler(
      failing.pipe(
        Layer.provideMerge(RequestPipelineLive),
        Layer.provide([SwitchyardConfig.layer, Drain.Default, RouteTable.Default]),
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map()))),
        Layer.provide(Layer.merge(capture(lines), Logger.minimumLogLevel(LogLevel.Info)))
      ),
      { disableLogger: true }
    )
    try {
      const response = await handler(
        new Request("http://localhost/v1/fails", { headers: { "x-request-id": "trace-42" } })
      )
      expect(response.status).toBe(500)
      const body = await response.json()
      expect(body.error.message).toContain("trace-42")
      const logged = lines.filter((l) => l.message.includes("about to fail") || l.message.includes("unhandled error"))
      expect(logged.map((l) => l.requestId)).toEqual(["trace-42", "trace-42"])
    } finally {
      await dispose()
    }
  })

  it("the fast paths' unhandled errors carry it too", async () => {
    const lines: Array<Line> = []
    const answer = await Effect.runPromise(
      unexpectedFailure(Effect.runSync(Effect.cause(Effect.die(new Error("boom")))), "trace-7").pipe(
        Effect.provide(capture(lines))
      )
    )
    expect(answer.status).toBe(500)
    expect(lines.map((l) => [l.message.includes("unhandled error"), l.requestId])).toEqual([[true, "trace-7"]])
  })
})
