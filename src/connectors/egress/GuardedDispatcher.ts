/**
 * An undici dispatcher that enforces an `EgressPolicy` on the address each new connection is made to.
 *
 * Why at connect time: checking a URL before the request (resolve, judge, then let undici resolve again)
 * loses to DNS rebinding, where the second answer differs from the first. Here the guard is the `lookup`
 * that `net.connect` itself uses, so the addresses judged are exactly the addresses dialled. IP-literal
 * hosts never reach `lookup` (Node skips DNS for them), so the connector judges those up front.
 *
 * The guard sits in the connector, below undici's pools: it runs once per new socket, keep-alive reuse is
 * untouched, and every origin a redirect interceptor (or a caller) moves to passes through it again.
 */
import * as Dns from "node:dns"
import * as Net from "node:net"
import { Agent, buildConnector } from "undici"
import { blockedReason, type EgressPolicy } from "./EgressPolicy.js"

/** A connection was refused because its destination is internal and not allowlisted. */
export class EgressRefused extends Error {
  override readonly name = "EgressRefused"
  /** Stable code for logs and for callers that only see a serialized error. */
  readonly code = "ERR_EGRESS_REFUSED"
  readonly host: string
  readonly address: string
  readonly reason: string

  constructor(host: string, address: string, reason: string) {
    const target = address === "" || address === host ? host : `${host} (${address})`
    super(`egress to ${target} refused: ${reason}; allow it with SWITCHYARD_EGRESS_ALLOW if intended`)
    this.host = host
    this.address = address
    this.reason = reason
  }
}

/**
 * Finds an `EgressRefused` in an error as thrown by undici or fetch: either the error itself or somewhere
 * down its `cause` chain (fetch wraps connect errors in `TypeError: fetch failed`), or inside an
 * AggregateError.
 */
export const findEgressRefusal = (error: unknown): EgressRefused | undefined => {
  const seen = new Set<unknown>()
  const queue: Array<unknown> = [error]
  while (queue.length > 0) {
    const current = queue.shift()
    if (current === null || typeof current !== "object" || seen.has(current)) continue
    seen.add(current)
    if (current instanceof EgressRefused) return current
    const { cause, errors } = current as { cause?: unknown; errors?: unknown }
    queue.push(cause)
    if (Array.isArray(errors)) queue.push(...errors)
  }
  return undefined
}

const unbracket = (host: string) => host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host

/** The decision for one (host, address) pair once the host itself is known not to be allowlisted. */
const judge = (policy: EgressPolicy, host: string, address: string): EgressRefused | undefined => {
  if (policy.isAllowedAddress(address)) return undefined
  const reason = blockedReason(address)
  return reason === undefined ? undefined : new EgressRefused(host, address, reason)
}

/**
 * A `lookup` for `net.connect` that resolves every address and refuses the whole name if any of them is
 * blocked. Refusing rather than filtering: a name that mixes public and internal answers is what a rebinding
 * attack looks like, and dropping the bad answers would still leave the attacker choosing where we connect.
 */
const guardedLookup = (policy: EgressPolicy): Net.LookupFunction => (hostname, options, callback) => {
  Dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, "")
    for (const { address } of addresses) {
      const refused = judge(policy, hostname, address)
      if (refused !== undefined) return callback(refused, "")
    }
    // Node asks for `all` when it races address families (autoSelectFamily), otherwise for the first answer
    if (options.all === true) return callback(null, addresses)
    const first = addresses[0]!
    callback(null, first.address, first.family)
  })
}

export interface GuardedConnectorOptions {
  readonly connectTimeoutMs?: number
}

/** The connector behind `makeGuardedDispatcher`, for building a guarded `Client` or `Pool` directly. */
export const makeGuardedConnector = (
  policy: EgressPolicy,
  options: GuardedConnectorOptions = {}
): buildConnector.connector => {
  const timeout = options.connectTimeoutMs ?? 10_000
  const open = buildConnector({ timeout })
  const guarded = buildConnector({ timeout, lookup: guardedLookup(policy) })
  return (connectOptions, callback) => {
    // undici strips the brackets from IPv6 literals before calling us; strip defensively for direct callers
    const host = unbracket(connectOptions.hostname)
    if (policy.isAllowedHost(host)) return open(connectOptions, callback)
    if (Net.isIP(host) !== 0) {
      const refused = judge(policy, host, host)
      // undici expects the callback asynchronously, as from a real connect attempt
      if (refused !== undefined) return void process.nextTick(callback, refused, null)
      return open(connectOptions, callback)
    }
    // Note: `httpSocket` (TLS over a proxy tunnel) lets the proxy resolve the name; this guard then only
    // covers the connection to the proxy itself. The dispatcher built here never tunnels.
    return guarded(connectOptions, callback)
  }
}

export interface GuardedDispatcherOptions {
  readonly connectTimeoutMs?: number
  readonly keepAliveTimeoutMs?: number
  /** Maximum sockets per origin (undici's `connections`); unlimited when absent. */
  readonly connections?: number
}

/**
 * An undici `Agent` for connector traffic that refuses internal destinations per `policy`.
 * It follows no redirects (undici 7 agents never do unless composed with `interceptors.redirect`); if a
 * caller composes one in, every hop still connects through the guard.
 */
export const makeGuardedDispatcher = (policy: EgressPolicy, options: GuardedDispatcherOptions = {}): Agent =>
  new Agent({
    connect: makeGuardedConnector(
      policy,
      options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }
    ),
    ...(options.keepAliveTimeoutMs === undefined ? {} : { keepAliveTimeout: options.keepAliveTimeoutMs }),
    ...(options.connections === undefined ? {} : { connections: options.connections })
  })

/**
 * Pre-flight check of a URL against `policy`, resolving its name once. Useful to fail fast with a clear
 * message (e.g. before fetching OAuth metadata); it is not a substitute for sending the request through
 * `makeGuardedDispatcher`, since the name may resolve differently by the time of the real connection.
 * Rejects on an unparseable URL or a DNS failure; resolves to the refusal, or undefined when allowed.
 */
export const checkUrl = async (url: string, policy: EgressPolicy): Promise<EgressRefused | undefined> => {
  const parsed = new URL(url)
  const host = unbracket(parsed.hostname)
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return new EgressRefused(host || url, "", `unsupported scheme ${parsed.protocol}`)
  }
  if (policy.isAllowedHost(host)) return undefined
  if (Net.isIP(host) !== 0) return judge(policy, host, host)
  const addresses = await Dns.promises.lookup(host, { all: true })
  for (const { address } of addresses) {
    const refused = judge(policy, host, address)
    if (refused !== undefined) return refused
  }
  return undefined
}
