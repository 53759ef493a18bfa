import * as EntityId from "@effect/cluster/EntityId"
import * as MessageStorage from "@effect/cluster/MessageStorage"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as Runners from "@effect/cluster/Runners"
import * as ShardId from "@effect/cluster/ShardId"
import * as Sharding from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SocketRunner from "@effect/cluster/SocketRunner"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import { Socket } from "@effect/platform/Socket"
import * as RpcClient from "@effect/rpc/RpcClient"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Layer, Option } from "effect"
import { ShardingSettings } from "./ShardingSettings.js"

/*
 * The runner sockets, as NodeClusterSocket makes them but with Nagle's algorithm off (`noDelay`). A
 * message between nodes is small and answered at once; with Nagle on, a message written while the one
 * before it is unacknowledged waited for the peer's delayed ACK: tens of milliseconds per message between
 * nodes on a quiet link (issue 20).
 */

/** Connections to other nodes' runners. */
const RunnerClientLive = Layer.effect(
  Runners.RpcClientProtocol,
  Effect.gen(function*() {
    const serialization = yield* RpcSerialization.RpcSerialization
    return Effect.fnUntraced(function*(address) {
      const socket = yield* NodeSocket.makeNet({
        openTimeout: 1000,
        timeout: 5500,
        host: address.host,
        port: address.port,
        noDelay: true
      })
      return yield* RpcClient.makeProtocolSocket().pipe(
        Effect.provideService(Socket, socket),
        Effect.provideService(RpcSerialization.RpcSerialization, serialization)
      )
    }, Effect.orDie)
  })
)

/** This node's runner port. */
const RunnerServerLive = Layer.unwrapEffect(Effect.gen(function*() {
  const config = yield* ShardingConfig.ShardingConfig
  const address = Option.getOrThrow(Option.orElse(config.runnerListenAddress, () => config.runnerAddress))
  return NodeSocketServer.layer({ host: address.host, port: address.port, noDelay: true })
}))

/**
 * This node's cluster runner: it serves other nodes on the runner port, stores messages and shard
 * ownership in PostgreSQL, and pings peers to notice dead ones.
 */
export const ClusterRunnerLive = SocketRunner.layer.pipe(
  Layer.provide([RunnerServerLive, RunnerClientLive]),
  Layer.provide(
    RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(RunnerClientLive))
  ),
  Layer.provideMerge(Layer.orDie(SqlMessageStorage.layer)),
  Layer.provide(Layer.orDie(SqlRunnerStorage.layer)),
  Layer.provideMerge(ShardingSettings.layer),
  Layer.provide(RpcSerialization.layerMsgPack)
)

export interface ShardOwnership {
  readonly address: string
  readonly registered: boolean
  readonly owned: number
  readonly total: number
}

/** What `/readyz` checks: is this runner registered, and how many shards does it hold. */
export const shardOwnership = Effect.gen(function*() {
  const sharding = yield* Sharding.Sharding
  const config = yield* ShardingConfig.ShardingConfig
  const sql = yield* SqlClient.SqlClient
  const address = Option.getOrThrow(config.runnerAddress)
  const key = `${address.host}:${address.port}`
  const rows = yield* sql<{ healthy: boolean }>`SELECT healthy FROM cluster_runners WHERE address = ${key}`
  let owned = 0
  for (const group of config.availableShardGroups) {
    for (let n = 1; n <= config.shardsPerGroup; n++) {
      if (sharding.hasShardId(ShardId.make(group, n))) owned++
    }
  }
  return {
    address: key,
    registered: rows.length > 0 && rows[0]!.healthy,
    owned,
    total: config.shardsPerGroup * config.availableShardGroups.length
  } satisfies ShardOwnership
})

/**
 * Tasks on this node's shards that have waited longer than `after` to start. The node's task sweep
 * starts any it finds within seconds, so such tasks mean its loops (sweep, entities, database access)
 * are stalled while the node otherwise looks fine.
 */
export const stalledTasks = (after: Duration.Duration) =>
  Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const config = yield* ShardingConfig.ShardingConfig
    const sql = yield* SqlClient.SqlClient
    const seconds = Math.ceil(Duration.toSeconds(after))
    const owned: Array<number> = []
    for (let n = 1; n <= config.shardsPerGroup; n++) if (sharding.hasShardId(ShardId.make("default", n))) owned.push(n)
    // the tasks of this node's shards (and those written without one) only
    const rows = yield* sql<{ id: string }>`
      SELECT id FROM tasks
      WHERE finished_at IS NULL AND (shard = ANY(${owned}::int[]) OR shard IS NULL) AND status = 'pending'
        AND created_at < now() - make_interval(secs => ${seconds})
      ORDER BY created_at LIMIT 500`
    return rows.filter((r) => sharding.hasShardId(sharding.getShardId(EntityId.make(r.id), "default"))).length
  })

export type ClusterServices = Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage
