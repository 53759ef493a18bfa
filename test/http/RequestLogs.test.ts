import { HttpLayerRouter, HttpServerResponse } from "@effect/platform"
import { SqlError } from "@effect/sql/SqlError"
import { ConfigProvider, Effect, HashMap, Layer, Logger, LogLevel } from "effect"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { SwitchyardConfig } from "../../src/config/SwitchyardConfig.js"
import { Drain } from "../../src/http/Drain.js"
import { RequestPipelineLive, unexpectedFailure } from "../../src/http/RequestPipeline.js"
import { RouteTable } from "../../src/http/RouteTable.js"
import { freshDatabase } from "../support/TestDatabase.js"

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

  it("a transaction PostgreSQL rolled back in a deadlock is a 503 to send again, not a 500", async () => {
    // a real deadlock: two transactions, each holding the row the other wants
    const url = await freshDatabase()
    const [a, b] = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })]
    await Promise.all([a.connect(), b.connect()])
    let deadlock: unknown
    try {
      await a.query("CREATE TABLE pair (id int PRIMARY KEY)")
      await a.query("INSERT INTO pair VALUES (1), (2)")
      await Promise.all([a.query("BEGIN"), b.query("BEGIN")])
      await a.query("UPDATE pair SET id = id WHERE id = 1")
      await b.query("UPDATE pair SET id = id WHERE id = 2")
      const outcomes = await Promise.allSettled([
        a.query("UPDATE pair SET id = id WHERE id = 2"),
        b.query("UPDATE pair SET id = id WHERE id = 1")
      ])
      deadlock = outcomes.flatMap((o) => o.status === "rejected" ? [o.reason] : [])[0]
    } finally {
      await Promise.all([a.end(), b.end()])
    }
    expect((deadlock as { code?: string }).code).toBe("40P01")

    const lines: Array<Line> = []
    const failure = new SqlError({ cause: deadlock, message: "Failed to execute statement" })
    const answer = await Effect.runPromise(
      unexpectedFailure(Effect.runSync(Effect.cause(Effect.fail(failure))), "trace-8").pipe(
        Effect.provide(capture(lines))
      )
    )
    expect(answer.status).toBe(503)
    expect(answer.error.code).toBe("database_conflict")
    expect(answer.headers).toEqual({ "retry-after": "1" })
    expect(lines.map((l) => [l.message.includes("rolled back"), l.requestId])).toEqual([[true, "trace-8"]])
  })
})
