import { afterAll, describe, expect, it, onTestFailed } from "vitest"
import { type Scenario, startScenario, steppedScript } from "../support/ClusterScenario.js"
import { eventually } from "../support/Poll.js"

let scenario: Scenario | undefined
afterAll(() => scenario?.stop())

const ownedShards = async (baseUrl: string) => {
  const ready = await fetch(`${baseUrl}/readyz`).then((r) => r.json()) as any
  return ready.shards_owned as number | undefined
}

describe("scaling out and in under load (2 → 3 → 2 nodes)", () => {
  it("moves shards to the new node and back, and completes every task", async () => {
    scenario = await startScenario({ nodes: 2, script: steppedScript(200) })
    // a failure here has been seen once under the full suite's load (a reset connection): keep the nodes' logs
    onTestFailed(() => {
      for (const node of scenario?.cluster.nodes ?? []) {
        console.log(
          `--- node ${node.index} (exit ${node.process.child.exitCode ?? node.process.child.signalCode}) ---\n${
            node.process.output().slice(-20_000)
          }`
        )
      }
    })
    const { cluster } = scenario
    const accepted = [...await scenario.invoke(Array.from({ length: 30 }, (_, n) => n))]

    const third = await cluster.add()
    // the new node takes a share of the shards
    await eventually(
      async () => ((await ownedShards(third.process.baseUrl)) ?? 0) > 0 ? true : undefined,
      30_000,
      "the third node to own shards",
      250
    )
    accepted.push(...await scenario.invoke(Array.from({ length: 30 }, (_, n) => 100 + n)))

    // scale in: the first node leaves gracefully while tasks run
    await cluster.nodes[0]!.process.stop()
    accepted.push(...await scenario.invoke(Array.from({ length: 30 }, (_, n) => 200 + n)))

    expect(accepted.map((a) => a.status)).toEqual(accepted.map(() => 202))
    const ends = await scenario.ends(accepted)
    expect(ends.map((e) => e.body.status)).toEqual(accepted.map(() => "completed"))
    // the two nodes left come to own every shard between them (the last ones move as locks are taken)
    const ownedByLeft = async () => {
      const left = await Promise.all([1, 2].map((i) => ownedShards(cluster.nodes[i]!.process.baseUrl)))
      return (left[0] ?? 0) + (left[1] ?? 0)
    }
    const total = await eventually(
      async () => (await ownedByLeft()) === 300 ? 300 : undefined,
      30_000,
      "the two nodes left to own all 300 shards",
      250
    )
    expect(total).toBe(300)
  }, 180_000)
})
