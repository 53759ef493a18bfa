import { Effect } from "effect"

/** Storage failures are defects here: logged, answered 500/503 by the request pipeline, never detailed. */
export const orDieOnSql = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.catchIf(effect, (e: any) => e?._tag === "SqlError", Effect.die) as Effect.Effect<
    A,
    Exclude<E, { _tag: "SqlError" }>,
    R
  >
