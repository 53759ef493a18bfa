import { afterAll, describe, expect, it } from "vitest"
import { notOnce, type Scenario, startScenario, steppedScript } from "../support/ClusterScenario.js"
import { eventually } from "../support/Poll.js"

let scenario: Scenario | undefined
afterAll(() => scenario?.stop())

describe("a node paused past its shard lease (SIGSTOP), then resumed (SIGCONT)", () => {
  it("runs each task on one node at a time: no tool call made twice, every task completed", async () => {
    // a paused node's connections are ended after 8 s of silence (the default, 15 s, would do as well, slower)
    scenario = await startScenario({
      nodes: 2,
      script: steppedScript(300),
      env: { SWITCHYARD_HUNG_NODE_AFTER: "8 seconds" }
    })
    const ns = Array.from({ length: 40 }, (_, n) => n)
    const accepted = await scenario.invoke(ns)
    expect(accepted.map((a) => a.status)).toEqual(ns.map(() => 202))

    await new Promise((r) => setTimeout(r, 400))
    scenario.cluster.pause(1)
    // past its silence limit the live node ends the paused one's connections (its kernel keeps them open, and
    // with them its shard locks) and takes every shard while the other still sleeps
    const all = await scenario.holdingEveryShard(0, 30_000)
    expect(all.shards_owned).toBe(300)
    scenario.cluster.resume(1)

    const ends = await scenario.ends(accepted)
    expect(ends.map((e) => e.body.status)).toEqual(ns.map(() => "completed"))
    // the resumed node learns late that its shards moved: its claims on the tasks no longer hold, so it makes
    // no call the other node makes; a call it was making as it paused is not made again (outcome unknown)
    const calls = await scenario.toolCalls(accepted)
    expect(calls).toHaveLength(2 * ns.length)
    expect(notOnce(calls)).toEqual([])
    // the resumed node reconnects and takes its share of the shards again
    const back = await eventually(
      async () => (await scenario!.readyz(1))?.shards_owned > 0 || undefined,
      30_000,
      "node 1 back"
    )
    expect(back).toBe(true)
    const threads = await Promise.all(accepted.map((a) => scenario!.call("GET", `/v1/tasks/${a.body.id}/thread`)))
    for (const thread of threads) {
      const types = thread.body.events.map((e: any) => e.type)
      expect(types).toEqual([
        "user_message",
        "model_call",
        "tool_call",
        "model_call",
        "tool_call",
        "model_call",
        "agent_message"
      ])
    }
  }, 180_000)
})
