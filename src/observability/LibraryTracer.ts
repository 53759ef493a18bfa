import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { HttpClient } from "@effect/platform"
import { Duration, Effect, Option, type Scope, Tracer } from "effect"
import { layerProtobuf } from "./OtlpProtobuf.js"
import type { SpanExporterOptions } from "./SpanExporter.js"
import { randomHex, UnsampledSpan } from "./Spans.js"

/**
 * The tracer the node ran before its own (SpanExporter.ts): @effect/opentelemetry's OtlpTracer with our
 * protobuf encoder, behind the same sampler. Kept only as the baseline `npm run bench -- observability`
 * measures the node's tracer against in the same run (SWITCHYARD_TRACER=library; not for production).
 */
export const makeLibraryTracer = (
  options: SpanExporterOptions,
  sample?: (parent: Option.Option<Tracer.AnySpan>, traceId: () => string) => boolean
): Effect.Effect<Tracer.Tracer, never, HttpClient.HttpClient | Scope.Scope> =>
  Effect.map(
    OtlpTracer.make({
      url: options.url,
      resource: {
        serviceName: options.resource.scopeName,
        attributes: Object.fromEntries(options.resource.attributes.filter(([k]) => k !== "service.name"))
      },
      headers: options.headers,
      exportInterval: Duration.millis(options.exportIntervalMs)
    }),
    (exporting) =>
      sample === undefined ? exporting : Tracer.make({
        span: (name, parent, context, links, startTime, kind, spanOptions) => {
          let drawn: string | undefined
          const traceId = () => Option.isSome(parent) ? parent.value.traceId : (drawn ??= randomHex(16))
          return sample(parent, traceId)
            ? exporting.span(name, parent, context, links, startTime, kind, spanOptions)
            : new UnsampledSpan(name, parent, context, links, startTime, kind, traceId())
        },
        context: (f, fiber) => exporting.context(f, fiber)
      })
  ).pipe(Effect.provide(options.protocol === "http/json" ? OtlpSerialization.layerJson : layerProtobuf))
