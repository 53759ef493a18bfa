import * as EntityId from "@effect/cluster/EntityId"
import * as ShardId from "@effect/cluster/ShardId"
import * as Sharding from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { v7 as uuidV7 } from "uuid"
import type { TaskId } from "../../schema/Ids.js"

/** Ids tried for one on this node's shards before settling for any (a node holding 1/4 of them: 0.75^64). */
const TRIES = 64

/** The last 8 hex digits of a UUIDv7 are random (uuid's v7: bytes 12–15); the rest is time and counter. */
const RANDOM_TAIL = 8

/**
 * Where a new task runs: on the node that accepted it. A task's shard is a hash of its id, so the accepting
 * node picks an id whose shard it owns: the run then stays here (its row handed over in memory, no trip
 * through the entity's mailbox, its readers answered from what this node knows), and should this node
 * die, the task moves with its shard like any other. With N nodes, a random id would land on another
 * node's shard (N−1)/N of the time, and each such task cost its two nodes several times what a local one
 * costs (issue 20). The id stays time-ordered: only its random tail is drawn again.
 */
export class TaskPlacement extends Effect.Service<TaskPlacement>()("tasks/TaskPlacement", {
  effect: Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const { shardsPerGroup } = yield* ShardingConfig.ShardingConfig

    const isLocal = (taskId: string) => sharding.hasShardId(sharding.getShardId(EntityId.make(taskId), "default"))

    // whether this node owns any shard, looked at once a second (a joining node has none yet)
    let owns = false
    let ownsUntil = 0
    const ownsAny = () => {
      const now = Date.now()
      if (now >= ownsUntil) {
        ownsUntil = now + 1000
        owns = false
        for (let i = 1; i <= shardsPerGroup && !owns; i++) owns = sharding.hasShardId(ShardId.make("default", i))
      }
      return owns
    }

    // random tails drawn in bulk: one call into the CSPRNG per 256 of them
    const pool = new Uint32Array(256)
    let next = pool.length
    const randomTail = () => {
      if (next === pool.length) {
        Crypto.getRandomValues(pool)
        next = 0
      }
      return pool[next++]!.toString(16).padStart(RANDOM_TAIL, "0")
    }

    /** A new task id (UUIDv7) on this node's shards; any id when this node owns none (or none was found). */
    const newId = (): TaskId => {
      const id = uuidV7()
      if (isLocal(id) || !ownsAny()) return id as TaskId
      const head = id.slice(0, id.length - RANDOM_TAIL)
      for (let i = 1; i < TRIES; i++) {
        const candidate = head + randomTail()
        if (isLocal(candidate)) return candidate as TaskId
      }
      return id as TaskId
    }

    /** The task's shard number (1…shards per group), as stored with it for the sweep. */
    const shardOf = (taskId: string) => sharding.getShardId(EntityId.make(taskId), "default").id

    /** The shards this node owns now, by number. */
    const ownedShards = () => {
      const owned: Array<number> = []
      for (let i = 1; i <= shardsPerGroup; i++) if (sharding.hasShardId(ShardId.make("default", i))) owned.push(i)
      return owned
    }

    return { newId, isLocal, shardOf, ownedShards } as const
  })
}) {}
