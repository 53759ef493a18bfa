import { Deferred, Effect, Fiber, FiberId } from "effect"
import * as Crypto from "node:crypto"
import { AgentEntity, type BudgetExhausted } from "../../cluster/AgentEntity.js"
import type { AgentId } from "../../schema/Ids.js"
import { periodicWhileBusy } from "../support/Periodic.js"

/** Spend is reported, and leases unused for IDLE_MS handed back, this often. */
const FLUSH = "200 millis"
const IDLE_MS = 500
/** A node that holds a lease says so at least this often (the Agent entity forgets silent holders). */
const HEARTBEAT_MS = 2_000
/** A lease asked for covers this many calls like the one asking, or the calls of the last second if more. */
const CALLS_PER_LEASE = 16
/** A refusal this recent stands for calls that would ask again (a budget raised is seen after it). */
const REFUSAL_MS = 1_000
/**
 * After a refusal for budget held only for the moment (by leases, this node's or others'), calls wait for a call
 * here to end, or this long, then ask again: what is held comes back, or is spent, as those calls end.
 */
const RETRY_MS = 250
/** After a lease request failed to be delivered, calls reserve one by one (as before leases) this long. */
const PER_CALL_MS = 10_000

/**
 * Whether a refusal says the agent's spend leaves no room for a call of `estimate` (its budget is spent, as far
 * as such calls go), rather than that leases hold the room for the moment.
 */
const noRoomFor = (refusal: BudgetExhausted, estimate: number) => refusal.limit_usd - refusal.spent_usd < estimate

/** A call's reservation: from this node's lease, or (`perCall`) one by one at the entity. */
export interface Reservation {
  readonly usd: number
  readonly perCall: string | undefined
}

interface Lease {
  /** Granted, not reserved by a call. */
  available: number
  /** Reserved by calls in flight. */
  inflight: number
  /** Spent by calls since the last report. */
  unreported: number
  lastUse: number
  lastReport: number
  /** Handed back at the entity's word: what is held now is to be said with the next flush, even if nothing. */
  handedBack: boolean
  /** Calls reserved here since `countedSince`, and the calls a second that made before (a lease's size). */
  calls: number
  countedSince: number
  perSecond: number
  /** The request to the Agent entity in flight, if any: one at a time, so that reports arrive in order. */
  asking: Deferred.Deferred<void> | undefined
  /**
   * The entity's last refusal: for REFUSAL_MS calls that the spend leaves no room for fail without asking
   * again; others wait for a call here to end (`settled`), or RETRY_MS, before asking again.
   */
  refused: BudgetExhausted | undefined
  refusedAt: number
  /** When a call here last settled, and the signal of the next settle to calls waiting for one. */
  settledAt: number
  settled: Deferred.Deferred<void> | undefined
  /** Until then calls reserve one by one (`Reserve`), as from a node of the previous release. */
  perCallUntil: number
}

/**
 * This node's share of the budgets of the agents whose tasks it runs. A model call reserves its
 * worst-case cost from the node's lease of the agent's budget and settles its actual cost into it, both
 * in memory; the node asks the agent's entity for more when the lease runs short (a lease covers
 * CALLS_PER_LEASE calls, or a second's calls when the agent is busier), and reports what it spent, hands
 * back what it no longer uses, every FLUSH. So a call costs no message to another node, and the entity
 * sees a few messages a second per node, however many calls (issue 20). The entity never grants more than
 * the budget has free: the nodes together never reserve past the cap.
 */
export class BudgetLeases extends Effect.Service<BudgetLeases>()("agents/BudgetLeases", {
  scoped: Effect.gen(function*() {
    const agents = yield* AgentEntity.client
    const scope = yield* Effect.scope
    /** This node, as a holder of leases: new with each start. */
    const holder = Crypto.randomUUID()
    const leases = new Map<AgentId, Lease>()

    const leaseOf = (agentId: AgentId) => {
      let lease = leases.get(agentId)
      if (lease === undefined) {
        lease = {
          available: 0,
          inflight: 0,
          unreported: 0,
          lastUse: 0,
          lastReport: 0,
          handedBack: false,
          calls: 0,
          countedSince: Date.now(),
          perSecond: 0,
          asking: undefined,
          refused: undefined,
          refusedAt: 0,
          settledAt: 0,
          settled: undefined,
          perCallUntil: 0
        }
        leases.set(agentId, lease)
        flushes.wake()
      }
      return lease
    }

    /**
     * One request to the entity: reports the spend and what the lease holds (less `returned`, handed back),
     * asks for `want`. A failed delivery keeps the spend to report again (counted twice at worst: less
     * spent, never more) and does not take back what was handed back (held less than the entity thinks).
     * Begun at once (`lease.asking` is set on return); the effect returned sends it.
     */
    const begin = (agentId: AgentId, lease: Lease, want: number, min: number, returned: number) => {
      const done = Deferred.unsafeMake<void>(FiberId.none)
      lease.asking = done
      const reported = lease.unreported
      lease.available -= returned
      lease.lastReport = Date.now()
      lease.handedBack = false
      return agents(agentId).Lease({
        holder,
        held_usd: lease.available + lease.inflight,
        spent_usd: reported,
        want_usd: want,
        min_usd: min
      }).pipe(
        Effect.tap(({ granted_usd }) =>
          Effect.sync(() => {
            lease.unreported -= reported
            // negative: the budget was lowered, hand back what no call here reserved (AgentEntityLive)
            lease.available = Math.max(0, lease.available + granted_usd)
            if (granted_usd > 0) lease.refused = undefined
            // what is held now, said soon: the entity counts what it asked back as held until then
            if (granted_usd < 0) lease.handedBack = true
          })
        ),
        // the cluster failing to deliver is a defect, as for any call between nodes
        Effect.catchIf((e) => e._tag !== "BudgetExhausted", Effect.die),
        // refused, the spend was recorded all the same
        Effect.tapErrorTag("BudgetExhausted", (refusal) =>
          Effect.sync(() => {
            lease.unreported -= reported
            lease.refused = refusal
            lease.refusedAt = Date.now()
          })),
        Effect.ensuring(Effect.sync(() => {
          lease.asking = undefined
          Deferred.unsafeDone(done, Effect.void)
        }))
      )
    }

    const ask = (agentId: AgentId, lease: Lease, want: number, min: number, returned: number) =>
      Effect.suspend(() => begin(agentId, lease, want, min, returned))

    /**
     * `begin`, sent on a fiber of its own: a caller that stops waiting (its task cancelled or out of time)
     * leaves the request to finish, since other calls wait for it and its answer changes the lease. Waits
     * for it, interruptibly; a delivery failed is a defect here too.
     */
    const askDetached = (agentId: AgentId, lease: Lease, want: number, min: number, returned: number) =>
      Effect.suspend(() =>
        Effect.flatMap(
          Effect.forkIn(Effect.exit(begin(agentId, lease, want, min, returned)), scope),
          (fiber) => Effect.flatMap(Effect.interruptible(Fiber.await(fiber)), Effect.flatten)
        )
      )

    let serial = 0
    /**
     * A reservation of one call at the entity, as before leases; refused for budget held only for the moment,
     * it waits RETRY_MS and tries again. A call that stops waiting has its reservation settled at 0 (it may
     * have been made).
     */
    const reserveOne = (agentId: AgentId, estimate: number): Effect.Effect<Reservation, BudgetExhausted> => {
      const perCall = `${holder}:${serial++}`
      return Effect.interruptible(agents(agentId).Reserve({ reservation: perCall, estimate_usd: estimate })).pipe(
        Effect.catchIf((e) => e._tag !== "BudgetExhausted", Effect.die),
        Effect.onInterrupt(() =>
          Effect.forkIn(Effect.ignore(agents(agentId).Settle({ reservation: perCall, actual_usd: 0 })), scope)
        ),
        Effect.as<Reservation>({ usd: estimate, perCall }),
        Effect.catchTag("BudgetExhausted", (refusal) =>
          noRoomFor(refusal, estimate)
            ? Effect.fail(refusal)
            : Effect.zipRight(Effect.interruptible(Effect.sleep(RETRY_MS)), reserve(agentId, estimate, false)))
      )
    }

    /**
     * Reserves a call's worst-case cost; fails when what the agent spent leaves no room for it. When the
     * budget is short only of what leases hold now (calls in flight here or on other nodes), the call waits
     * for them to end and asks again: such a shortage never fails a call, as a spent budget does. Should a
     * lease request not be delivered (the entity's node is of the previous release, which knows no `Lease`, or
     * it is going away), calls reserve one by one for a while instead.
     *
     * Made to run uninterruptibly (the acquire of a call's reservation), with its waits interruptible (for
     * the entity, for budget held): a cancel, the time limit or a shutdown stops a call waiting here, while a
     * reservation taken is always returned to be settled.
     */
    const reserve = (agentId: AgentId, estimate: number, first = true): Effect.Effect<Reservation, BudgetExhausted> =>
      Effect.suspend(() => {
        const lease = leaseOf(agentId)
        if (first) lease.calls++
        if (lease.available >= estimate) {
          lease.available -= estimate
          lease.inflight += estimate
          lease.lastUse = Date.now()
          return Effect.succeed<Reservation>({ usd: estimate, perCall: undefined })
        }
        const now = Date.now()
        if (now < lease.perCallUntil) return reserveOne(agentId, estimate)
        const refused = lease.refused !== undefined && now - lease.refusedAt < REFUSAL_MS ? lease.refused : undefined
        // the spend left no room a moment ago: ask again only once it granted some (to a call here)
        if (refused !== undefined && noRoomFor(refused, estimate)) return Effect.fail(refused)
        // another call asks already: its grant may cover this one too
        if (lease.asking !== undefined) {
          return Effect.zipRight(Effect.interruptible(Deferred.await(lease.asking)), reserve(agentId, estimate, false))
        }
        // short only of what is held: nothing came back since the refusal, so wait for a call here to end, or a while
        if (refused !== undefined && lease.settledAt <= lease.refusedAt && now - lease.refusedAt < RETRY_MS) {
          lease.settled ??= Deferred.unsafeMake<void>(FiberId.none)
          return Deferred.await(lease.settled).pipe(
            Effect.timeout(RETRY_MS - (now - lease.refusedAt)),
            Effect.interruptible,
            Effect.ignore,
            Effect.zipRight(reserve(agentId, estimate, false))
          )
        }
        return Effect.zipRight(
          // a busy agent asks about once a second, however many calls (the entity grants at most half of what is
          // free); what is left here, too little for this call, goes back with the request, to be granted whole
          askDetached(
            agentId,
            lease,
            estimate * Math.max(CALLS_PER_LEASE, Math.ceil(lease.perSecond)),
            estimate,
            lease.available
          ).pipe(
            Effect.catchTag("BudgetExhausted", () => Effect.void),
            Effect.catchAllDefect(() => Effect.sync(() => void (lease.perCallUntil = Date.now() + PER_CALL_MS)))
          ),
          reserve(agentId, estimate, false)
        )
      })

    /** A call reserved with `reserve` cost `actual` (0 when it was not made). */
    const settle = (agentId: AgentId, reserved: Reservation, actual: number): Effect.Effect<void> => {
      if (reserved.perCall !== undefined) {
        return agents(agentId).Settle({ reservation: reserved.perCall, actual_usd: actual }).pipe(
          Effect.catchAllCause(() => Effect.void)
        )
      }
      const lease = leaseOf(agentId)
      lease.inflight -= reserved.usd
      lease.available += reserved.usd - actual
      lease.unreported += actual
      lease.lastUse = lease.settledAt = Date.now()
      if (lease.settled !== undefined) {
        Deferred.unsafeDone(lease.settled, Effect.void)
        lease.settled = undefined
      }
      return Effect.void
    }

    /**
     * Whether the agent's budget has room for a task here: this node holds some of it unreserved, and was
     * not refused more since. (A budget lowered since is seen once this node asks for more.)
     */
    const hasRoom = (agentId: AgentId) => {
      const lease = leases.get(agentId)
      return lease !== undefined && lease.refused === undefined && lease.available > 0
    }

    /**
     * Reports to the agent's entity now, on its own fiber (a reader that stops waiting does not leave the spend
     * to be reported twice), when this node holds a lease of its budget: with `always`, whatever there is to
     * report, else only spend not reported yet.
     */
    const reportNow = (agentId: AgentId, always: boolean): Effect.Effect<void> =>
      Effect.suspend(() => {
        const lease = leases.get(agentId)
        if (lease === undefined) return Effect.void
        if (lease.asking !== undefined) return Effect.zipRight(Deferred.await(lease.asking), reportNow(agentId, always))
        if (!always && !(lease.unreported > 0)) return Effect.void
        return Effect.catchAllCause(askDetached(agentId, lease, 0, 0, 0), () => Effect.void)
      })

    /**
     * Reports what this node spent of the agent's budget and has not reported yet, so that a read of the
     * agent's spend on this node counts every call that ended here (other nodes report within FLUSH).
     */
    const report = (agentId: AgentId) => reportNow(agentId, false)

    /** After a change of the budget: a budget lowered below what is held takes its excess back at once. */
    const recheck = (agentId: AgentId) => reportNow(agentId, true)

    /** Reports spend, hands back what is unused, says what is held; forgets agents with nothing here. */
    const flush = Effect.suspend(() => {
      const now = Date.now()
      const reports: Array<Effect.Effect<unknown>> = []
      for (const [agentId, lease] of leases) {
        if (now - lease.countedSince >= 1_000) {
          lease.perSecond = lease.calls * 1_000 / (now - lease.countedSince)
          lease.calls = 0
          lease.countedSince = now
        }
        if (lease.asking !== undefined) continue
        const idle = now - lease.lastUse > IDLE_MS
        const holds = lease.available + lease.inflight > 0
        if (
          lease.unreported > 0 || lease.handedBack || (idle && lease.available > 0) ||
          (holds && now - lease.lastReport > HEARTBEAT_MS)
        ) {
          // a report not delivered is sent again with the next (a defect too: the loop must go on)
          reports.push(Effect.catchAllCause(ask(agentId, lease, 0, 0, idle ? lease.available : 0), () => Effect.void))
        } else if (!holds && idle) {
          leases.delete(agentId)
        }
      }
      return Effect.all(reports, { concurrency: "unbounded", discard: true })
    })
    const flushes = yield* periodicWhileBusy(FLUSH, () => leases.size > 0, flush)
    yield* Effect.forkScoped(flushes.loop)

    return {
      reserve: (agentId: AgentId, estimate: number) => reserve(agentId, estimate),
      settle,
      hasRoom,
      report,
      recheck
    } as const
  })
}) {}
