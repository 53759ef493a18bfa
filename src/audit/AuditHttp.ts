import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { AuditReader } from "./AuditReader.js"

const contentTypes = {
  csv: "text/csv; charset=utf-8",
  json: "application/json",
  ndjson: "application/x-ndjson"
} as const

export const AuditHttpLive = HttpApiBuilder.group(Api, "audit", (handlers) =>
  Effect.gen(function*() {
    const reader = yield* AuditReader
    return handlers
      .handle("listAuditEvents", ({ urlParams }) =>
        Effect.flatMap(Principal, (p) =>
          reader.list(p, {
            eventType: urlParams.event_type,
            actor: urlParams.actor,
            target: urlParams.target,
            from: urlParams.from,
            to: urlParams.to,
            ...(urlParams.limit === undefined ? {} : { limit: urlParams.limit }),
            ...(urlParams.cursor === undefined ? {} : { cursor: urlParams.cursor })
          })))
      .handle("exportAuditEvents", ({ urlParams }) =>
        Effect.flatMap(Principal, (p) =>
          reader.exportRange(p, {
            eventType: urlParams.event_type,
            actor: urlParams.actor,
            target: urlParams.target,
            from: urlParams.from,
            to: urlParams.to
          }, urlParams.format)).pipe(
            Effect.map(({ body, format }) =>
              HttpServerResponse.stream(body, {
                contentType: contentTypes[format],
                headers: {
                  "content-disposition": `attachment; filename="audit-log.${format}"`,
                  "cache-control": "no-store"
                }
              })
            )
          ))
  })).pipe(Layer.provide(AuditReader.Default))
