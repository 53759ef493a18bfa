import { SqlClient } from "@effect/sql"
import { Duration, Effect, Layer, Schedule } from "effect"
import * as Crypto from "node:crypto"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"

/**
 * A hung node's shards move (issue 20's failover, for a node that is not dead).
 *
 * The cluster holds each shard by a PostgreSQL advisory lock on one connection of the node that owns it: a
 * node that dies drops its connections and so its locks at once. A node that is paused (`SIGSTOP`, a frozen
 * VM) or stuck keeps its connections open, and its kernel answers TCP keepalives for them: its locks never
 * lapse. The other nodes stop counting it once its heartbeat (`cluster_runners.last_heartbeat`, renewed each
 * SWITCHYARD_SHARD_LOCK_REFRESH_INTERVAL) is older than SWITCHYARD_SHARD_LOCK_EXPIRATION and assign its
 * shards among themselves, but cannot lock them: its tasks waited until it woke.
 *
 * So each node names its connections after its runner address (`application_name`), and every node ends the
 * connections of a runner silent for SWITCHYARD_HUNG_NODE_AFTER: its locks go, the shards move, and the new
 * owner resumes its tasks (a run of the old node that wakes finds its claim gone, or fails and ends nothing:
 * fenced runs, docs/design.md). Its open transactions roll back with them, so none holds a row the new owner
 * needs. The limit is longer than the expiration: a node only slowed down by a busy machine must keep its
 * connections (ending them fails its start-up, or statements in flight). Only connections opened before the
 * last heartbeat are ended: a node restarted at the same address connects before it registers again.
 *
 * The same names tell a dead node at once: a node that is killed (or whose machine's kernel closes its sockets)
 * leaves no connection, so its heartbeat is set back past SWITCHYARD_SHARD_LOCK_EXPIRATION and the others
 * count it gone at their next assignment refresh, without waiting for its heartbeat to age. Its locks went with
 * its connections. So failover does not depend on the expiration, which can be long enough that a node stalled
 * for a few seconds (a CPU quota, a long GC) keeps its shards. A live node always holds its lock connection; were
 * it ever counted gone, it registers again at its next refresh. Detection is skipped where this node cannot see
 * its own connections by name (a pooler that rewrites `application_name`).
 */

/** The `application_name` of a node's connections: its runner address, hashed to fit the 63 bytes allowed. */
export const runnerConnectionName = (host: string, port: number) =>
  `switchyard runner ${Crypto.createHash("md5").update(`${host}:${port}`).digest("hex").slice(0, 16)}`

/** The same name, in SQL, for a `cluster_runners.address` (host:port, as the cluster stores it). */
const nameOf = (address: string) => `'switchyard runner ' || left(md5(${address}), 16)`

/** The connections of this database only: another cluster on the same server may reuse a runner address. */
const connectionsOf = (name: string) =>
  `SELECT 1 FROM pg_stat_activity a WHERE a.datname = current_database() AND a.application_name = ${name}`

/** A check's rows, each a node acted on, logged as warnings; a failed check is only retried next time. */
const warnEach =
  <Row>(message: (row: Row) => string, failed: string) => <E, R>(rows: Effect.Effect<ReadonlyArray<Row>, E, R>) =>
    rows.pipe(
      Effect.flatMap((rows) => Effect.forEach(rows, (row) => Effect.logWarning(message(row)), { discard: true })),
      Effect.catchAllCause((cause) => Effect.logDebug(failed, cause)),
      Effect.withTracerEnabled(false)
    )

export const RunnerConnectionsLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* SwitchyardConfig
    const self = `${config.runner.host}:${config.runner.port}`
    const silentFor = Duration.toMillis(config.hungNodeAfter) / 1000
    const expiration = Duration.toMillis(config.sharding.shardLockExpiration) / 1000
    const endSilent = sql<{ address: string; ended: number; silent: number }>`
      SELECT r.address, count(pg_terminate_backend(a.pid))::int AS ended,
        extract(epoch FROM now() - r.last_heartbeat)::float8 AS silent
      FROM cluster_runners r
      JOIN pg_stat_activity a ON a.application_name = ${sql.literal(nameOf("r.address"))}
        AND a.datname = current_database() AND a.backend_start < r.last_heartbeat
      WHERE r.address <> ${self} AND r.last_heartbeat < now() - make_interval(secs => ${silentFor})
      GROUP BY r.address, r.last_heartbeat`.pipe(
      warnEach(
        (row) =>
          `node ${row.address} has not renewed its shard locks for ${row.silent.toFixed(1)} s (paused or ` +
          `hung): ended its ${row.ended} database connection(s), so its shards move to live nodes`,
        "ending a silent node's connections failed"
      )
    )
    const countGone = sql<{ address: string }>`
      UPDATE cluster_runners r SET last_heartbeat = now() - make_interval(secs => ${expiration + 1})
      WHERE r.address <> ${self} AND r.last_heartbeat > now() - make_interval(secs => ${expiration})
        AND EXISTS (${sql.literal(connectionsOf(`'${runnerConnectionName(config.runner.host, config.runner.port)}'`))})
        AND NOT EXISTS (${sql.literal(connectionsOf(nameOf("r.address")))})
      RETURNING r.address`.pipe(
      warnEach(
        (row) =>
          `node ${row.address} has no database connection left (killed, or it lost its network): its shards ` +
          `move to live nodes now`,
        "counting a dead node gone failed"
      )
    )
    yield* Effect.zipRight(countGone, endSilent).pipe(
      Effect.repeat(Schedule.spaced(config.sharding.refreshAssignmentsInterval)),
      Effect.forkScoped
    )
  })
)
