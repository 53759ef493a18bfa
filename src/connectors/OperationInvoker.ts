import { Cause, Duration, Effect, Exit, Option, Runtime } from "effect"
import type { Readable } from "node:stream"
import type { InvokeOperation } from "../../schema/Connectors.js"
import { BadGateway, BadRequest, Conflict, Forbidden, GatewayTimeout, Unprocessable } from "../../schema/Errors.js"
import type { ConnectionId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { currentParentSpan, makeCallObserver } from "../observability/ConnectorObserver.js"
import { ConnectionCredentials } from "./ConnectionCredentials.js"
import { Egress } from "./Egress.js"
import { InvocationRecorder } from "./InvocationRecorder.js"
import { type CallRefusal, type Credentialed, type InvokeContext, makeOperationCall } from "./OperationCall.js"
import { OwnApi } from "./OwnApi.js"
import type { InvokeTarget } from "./PreparedCall.js"
import { classifyFailure } from "./Upstream.js"

export type { InvokeContext, InvokeTarget }

/** The target's answer as the general stack passes it on (OperationCall.Answered, its body as a stream). */
export interface UpstreamResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string>>
  readonly body: Readable
}

/** A refusal as the error class the REST contract declares for its status. */
export const refusalError = (r: CallRefusal) => {
  switch (r.status) {
    case 400:
      return BadRequest.of(r.message, r.details, r.code)
    case 403:
      return Forbidden.of(r.message, r.code)
    case 409:
    case 499:
      return Conflict.of(r.message, r.code)
    case 422:
      return Unprocessable.of(r.message, r.code, r.details)
    case 502:
      return BadGateway.of(r.message, r.code)
    case 504:
      return GatewayTimeout.of(r.message)
  }
}

/**
 * Runs connector operations (OperationCall.ts, the one invoke core): `call` as a promise for the plain-Node
 * fast paths, `invoke` as an Effect for the general stack, agents' tool calls and the MCP tool. Interrupting
 * `invoke` aborts the upstream request as well.
 */
export class OperationInvoker extends Effect.Service<OperationInvoker>()("connectors/OperationInvoker", {
  effect: Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const egress = yield* Egress
    const credentials = yield* ConnectionCredentials
    const recorder = yield* InvocationRecorder
    const ownApi = yield* OwnApi
    const runExit = Runtime.runPromiseExit(yield* Effect.runtime<never>())
    const timeoutMs = Math.max(1, Duration.toMillis(config.connectorTimeout))
    const observer = yield* makeCallObserver

    const fetch = (id: ConnectionId, stale: boolean): Promise<Credentialed> =>
      runExit(credentials.get(id, { staleToken: stale })).then((exit) => {
        if (Exit.isSuccess(exit)) return { ok: true, credentials: exit.value }
        const failure = Cause.failureOption(exit.cause)
        if (Option.isSome(failure)) return { ok: false, unusable: failure.value }
        throw Cause.squash(exit.cause)
      })

    const call = makeOperationCall({
      dispatcher: egress.dispatcher,
      classify: (error) => classifyFailure(error, egress, timeoutMs),
      ownApi,
      credentials: { peek: credentials.peek, fetch },
      record: recorder.recordNow,
      timeoutMs,
      observer
    })

    const invokeUntraced = (
      principal: Principal,
      target: InvokeTarget,
      input: InvokeOperation,
      context: InvokeContext = {}
    ) =>
      Effect.async<UpstreamResponse, ReturnType<typeof refusalError>>((resume) => {
        const started = call(principal, target, input, context)
        started.outcome.then(
          (outcome) =>
            resume(
              outcome._tag === "Answered"
                ? Effect.succeed({ status: outcome.status, headers: outcome.headers, body: outcome.body.readable() })
                : Effect.fail(refusalError(outcome))
            ),
          (defect) => resume(Effect.die(defect))
        )
        return Effect.sync(() => started.abort())
      })

    // while spans are exported, the call's span goes under the caller's (issue 23)
    const invoke: typeof invokeUntraced = observer?.traces !== true
      ? invokeUntraced
      : (principal, target, input, context = {}) =>
        Effect.flatMap(
          currentParentSpan,
          (parentSpan) => invokeUntraced(principal, target, input, { ...context, parentSpan })
        )

    return { call, invoke } as const
  })
}) {}
