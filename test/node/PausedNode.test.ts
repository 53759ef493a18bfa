import { afterAll, describe, expect, it } from "vitest"
import { notOnce, type Scenario, startScenario, steppedScript } from "../support/ClusterScenario.js"

let scenario: Scenario | undefined
afterAll(() => scenario?.stop())

describe("a node paused past its shard lease (SIGSTOP), then resumed (SIGCONT)", () => {
  it("runs each task on one node at a time: no tool call made twice, every task completed", async () => {
    scenario = await startScenario({ nodes: 2, script: steppedScript(300) })
    const ns = Array.from({ length: 40 }, (_, n) => n)
    const accepted = await scenario.invoke(ns)
    expect(accepted.map((a) => a.status)).toEqual(ns.map(() => 202))

    await new Promise((r) => setTimeout(r, 400))
    scenario.cluster.pause(1)
    // past the 3 s lock expiry (and the other node's health checks of it)
    await new Promise((r) => setTimeout(r, 6_000))
    scenario.cluster.resume(1)

    const ends = await scenario.ends(accepted)
    expect(ends.map((e) => e.body.status)).toEqual(ns.map(() => "completed"))
    // the resumed node learns late that its shards moved: its claims on the tasks no longer hold, so it makes
    // no call the other node makes; a call it was making as it paused is not made again (outcome unknown)
    const calls = await scenario.toolCalls(accepted)
    expect(calls).toHaveLength(2 * ns.length)
    expect(notOnce(calls)).toEqual([])
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
