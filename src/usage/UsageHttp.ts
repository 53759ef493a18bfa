import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Schema } from "effect"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { UsageReport } from "../../schema/Usage.js"
import { Usage } from "./Usage.js"
import { usageCsv } from "./UsageCsv.js"
import { UsageLive } from "./UsageLive.js"

const encodeReport = Schema.encode(UsageReport)

export const UsageHttpLive = HttpApiBuilder.group(Api, "usage", (handlers) =>
  Effect.gen(function*() {
    const usage = yield* Usage
    return handlers.handle("getUsage", ({ urlParams: { format, ...filters } }) =>
      Effect.flatMap(Principal, (p) =>
        usage.report(p, filters)).pipe(
          Effect.flatMap((report) =>
            format === "csv"
              ? Effect.succeed(HttpServerResponse.text(usageCsv(report.rows), {
                contentType: "text/csv; charset=utf-8",
                headers: { "content-disposition": "attachment; filename=\"usage.csv\"", "cache-control": "no-store" }
              }))
              : Effect.map(Effect.orDie(encodeReport(report)), (body) => HttpServerResponse.unsafeJson(body))
          )
        ))
  })).pipe(Layer.provide(UsageLive))
