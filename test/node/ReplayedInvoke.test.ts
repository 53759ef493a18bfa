import { afterAll, describe, expect, it } from "vitest"
import { notOnce, type Scenario, startScenario, steppedScript } from "../support/ClusterScenario.js"
import { echo } from "../support/TargetServer.js"

let scenario: Scenario | undefined
afterAll(() => scenario?.stop())

describe("an invoke sent again with its Idempotency-Key to another node while its task runs", () => {
  it("answers with the task and leaves its run alone: every tool call made once, none of unknown outcome", async () => {
    scenario = await startScenario({ nodes: 2, script: steppedScript(50) })
    // slow tool calls: the first run is making one when the invoke comes again
    scenario.target.reply = async (request, response) => {
      await new Promise((r) => setTimeout(r, 700))
      echo(request, response)
    }
    const ns = Array.from({ length: 8 }, (_, n) => n)
    const invoke = (node: number, n: number) =>
      scenario!.callAt(node, "POST", `/v1/agents/${scenario!.agentId}/invoke?asynchronous=true`, {
        input: { text: `t${n}`, user: { id: `u${n}`, email: `u${n}@example.com` } }
      }, { "idempotency-key": `t${n}` })

    // accepted by node 0 (on its own shards), sent again to node 1 as the first tool calls are under way
    const accepted = await Promise.all(ns.map((n) => invoke(0, n)))
    expect(accepted.map((a) => a.status)).toEqual(ns.map(() => 202))
    await new Promise((r) => setTimeout(r, 400))
    const again = await Promise.all(ns.map((n) => invoke(1, n)))
    expect(again.map((a) => a.body.id)).toEqual(accepted.map((a) => a.body.id))

    const ends = await scenario.ends(accepted)
    expect(ends.map((e) => e.body.status)).toEqual(ns.map(() => "completed"))
    const calls = await scenario.toolCalls(accepted)
    expect(calls).toHaveLength(2 * ns.length)
    expect(calls.filter((c) => c.outcome === "unknown")).toEqual([])
    expect(notOnce(calls)).toEqual([])
  }, 120_000)
})
