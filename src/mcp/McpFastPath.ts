import { Cause, Effect, Layer } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { type Exchange, FastEdge } from "../http/FastEdge.js"
import { declaresBody, inspectJsonText } from "../http/JsonBody.js"
import { NodeRequestGate } from "../http/NodeRequestGate.js"
import { type Headers, McpAdmission } from "./McpAdmission.js"
import { type Answer, bodyJson } from "./McpAnswer.js"
import { McpProtocol } from "./McpProtocol.js"

/**
 * `POST /mcp/` in plain Node when the caller's token and session were verified recently on this node (both
 * caches also serve the Effect routes, with the same TTL): a thin transport over the protocol service
 * (McpAdmission.ts, McpProtocol.ts) and the shared edge (FastEdge.ts). It declines anything else before reading the body, and
 * the routes (McpEndpoint.ts) answer instead — a missing or bad token, a foreign Origin, an unsupported protocol
 * version, an unknown session, a wrong content type. A taken message is answered by the protocol without the
 * router and request pipeline; the hot one, a `tools/call` of a tool with a `fast` variant (invoke_operation:
 * the one invoke core, as the REST fast path), without a fiber at all. The same tests run against both
 * (test/mcp/FastPath.test.ts); SWITCHYARD_CONNECTOR_FAST_PATH=false turns this fast path off with the REST one.
 */
export const McpFastPathLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const gate = yield* NodeRequestGate
    const config = yield* SwitchyardConfig
    const edge = yield* FastEdge
    const protocol = yield* McpProtocol
    const admission = yield* McpAdmission

    const write = (exchange: Exchange, answer: Answer) => {
      switch (answer._tag) {
        case "Json": {
          // as the request pipeline does: our own error bodies get the envelope and the marker header
          const error = answer.status >= 400 ? (answer.body as any)?.error : undefined
          return typeof error?.code === "string"
            ? exchange.error(answer.status, error, answer.headers)
            : exchange.jsonText(answer.status, bodyJson(answer.body), answer.headers)
        }
        case "Empty":
          return exchange.empty(answer.status)
        case "Events":
          exchange.stream(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
          return exchange.run(
            answer.run((event) => Effect.sync(() => void exchange.res.write(event))),
            () => exchange.res.end()
          )
      }
    }

    if (!config.connectorFastPath) return
    gate.setFastPath((req, res) => {
      if (req.method !== "POST") return false
      const resource = admission.resourceAt(req.url ?? "")
      if (resource === undefined || !edge.takes(req, { jsonAlways: true })) return false
      const headers = req.headers as Headers
      const caller = admission.peekAdmitted(resource, headers)
      if (caller === undefined) return false

      const exchange = edge.begin(req, res, caller.principal.organizationId)
      exchange.readBody((text) => {
        const refused = declaresBody(headers) ? inspectJsonText(text) : undefined
        if (refused !== undefined) return exchange.error(400, refused)
        const answered = protocol.fastAnswer(
          resource,
          caller,
          text,
          headers,
          (abort) => res.once("close", abort),
          exchange.parentSpan()
        )
        if (answered === undefined) {
          return exchange.run(protocol.handleMessage(resource, caller, text, headers, true), (a) => write(exchange, a))
        }
        answered.then((a) => write(exchange, a), (defect) => exchange.fail(Cause.die(defect)))
      })
      return true
    })
  })
).pipe(Layer.provide(FastEdge.Default))
