import { Cause, Effect, Layer, ParseResult, Schema } from "effect"
import { InvokeOperation } from "../../schema/Connectors.js"
import type { ConnectionId } from "../../schema/Ids.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { Connections } from "../connectors/Connections.js"
import { ConnectorsLive } from "../connectors/ConnectorsLive.js"
import { OperationInvoker } from "../connectors/OperationInvoker.js"
import { ApiKeyAuthenticator } from "../identity/ApiKeyAuthenticator.js"
import { validationError } from "../support/Issues.js"
import { FastEdge } from "./FastEdge.js"
import { parseJsonBody } from "./JsonBody.js"
import { NodeRequestGate } from "./NodeRequestGate.js"

const ROUTE = /^\/v1\/tools\/connectors\/([^/?#]+)\/connections\/([0-9a-fA-F-]{36})\/([^/?#]+)$/
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

// the contract's schema, as HttpApi decodes the payload with it (its parse options are its annotations)
const decodeInput = Schema.decodeUnknownEither(Schema.NullOr(InvokeOperation))

/**
 * The connector invoke route (spec 4.5) in plain Node, for the common case where the verified key, the
 * connection and its connector are already in this node's memory: a thin adapter over the one invoke core
 * (OperationInvoker.call, OperationCall.ts) and the shared edge (FastEdge.ts). It declines anything else before
 * reading the body, and the full Effect stack handles the request instead; both give the same answers (the same
 * tests run against both). It exists because the per-request machinery of the general stack costs several times
 * what proxying the call does.
 */
export const FastInvokeLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const gate = yield* NodeRequestGate
    const config = yield* SwitchyardConfig
    const edge = yield* FastEdge
    const authenticator = yield* ApiKeyAuthenticator
    const connections = yield* Connections
    const invoker = yield* OperationInvoker

    if (!config.connectorFastPath) return
    gate.setFastPath((req, res) => {
      if (req.method !== "POST") return false
      const match = ROUTE.exec(req.url ?? "")
      if (match === null) return false
      const [, connectorId, connectionId, rawOperation] = match
      if (connectorId !== "_" && !UUID.test(connectorId!)) return false
      let operation: string
      try {
        operation = decodeURIComponent(rawOperation!)
      } catch {
        return false
      }
      if (!edge.takes(req)) return false
      const principal = authenticator.peek(req.headers["x-api-key"] as string | undefined)
      if (principal === undefined) return false
      const target = connections.peekTarget(principal, connectorId!, connectionId as ConnectionId, operation)
      if (target === undefined) return false

      const exchange = edge.begin(req, res, principal.organizationId)
      exchange.readBody((text) => {
        // an empty body is JSON null to HttpApi: the body may be left out (the contract is NullOr)
        const parsed = parseJsonBody(text, null)
        if (!parsed.ok) return exchange.error(400, parsed.error)
        const input = decodeInput(parsed.value)
        if (input._tag === "Left") {
          return exchange.error(400, validationError(ParseResult.ArrayFormatter.formatErrorSync(input.left)))
        }
        const parentSpan = exchange.parentSpan()
        const call = invoker.call(
          principal,
          target,
          input.right ?? {},
          parentSpan === undefined ? undefined : { parentSpan }
        )
        res.once("close", () => call.abort())
        call.outcome.then(
          (outcome) =>
            outcome._tag === "Answered"
              ? exchange.stream(outcome.status, outcome.headers, outcome.body)
              : exchange.error(outcome.status, outcome),
          (defect) => exchange.fail(Cause.die(defect))
        )
      })
      return true
    })
  })
).pipe(Layer.provide([ConnectorsLive, ApiKeyAuthenticator.Default, FastEdge.Default]))
