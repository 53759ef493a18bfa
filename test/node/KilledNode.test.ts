import { afterAll, describe, expect, it } from "vitest"
import { notOnce, type Scenario, startScenario, steppedScript } from "../support/ClusterScenario.js"
import { eventually } from "../support/Poll.js"

let scenario: Scenario | undefined
afterAll(() => scenario?.stop())

describe("a node killed (SIGKILL) under a long shard lock expiration", () => {
  it("its shards move once its database connections are gone, not after the expiration", async () => {
    // the expiration is far longer than the wait below: only the dead node's missing connections can explain
    // a takeover in time
    scenario = await startScenario({
      nodes: 2,
      script: steppedScript(300),
      env: {
        SWITCHYARD_SHARD_LOCK_EXPIRATION: "90 seconds",
        SWITCHYARD_SHARD_LOCK_REFRESH_INTERVAL: "3 seconds",
        SWITCHYARD_HUNG_NODE_AFTER: "120 seconds"
      }
    })
    await eventually(async () => (await scenario!.readyz(1))?.shards_owned > 0 || undefined, 30_000, "node 1 shards")
    const ns = Array.from({ length: 20 }, (_, n) => n)
    const accepted = await scenario.invoke(ns)
    expect(accepted.map((a) => a.status)).toEqual(ns.map(() => 202))

    await new Promise((r) => setTimeout(r, 400))
    await scenario.cluster.kill(1)
    const all = await scenario.holdingEveryShard(0, 45_000)
    expect(all.shards_owned).toBe(300)
    expect(scenario.cluster.nodes[0]!.process.output()).toMatch(/node \S+ has no database connection left/)

    // the tasks that were on the dead node's shards resume on the live one: each completes, no call twice
    const ends = await scenario.ends(accepted)
    expect(ends.map((e) => e.body.status)).toEqual(ns.map(() => "completed"))
    expect(notOnce(await scenario.toolCalls(accepted))).toEqual([])
  }, 120_000)
})
