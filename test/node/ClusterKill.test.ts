import { afterAll, describe, expect, it } from "vitest"
import { notOnce, type Scenario, startScenario, steppedScript } from "../support/ClusterScenario.js"

let scenario: Scenario | undefined
afterAll(() => scenario?.stop())

describe("three nodes behind a round-robin proxy, one killed", () => {
  it("finishes every accepted task; no tool call is made twice", async () => {
    scenario = await startScenario({ nodes: 3, script: steppedScript(400) })
    const { cluster, target } = scenario
    const ns = Array.from({ length: 60 }, (_, n) => n)
    const accepted = await scenario.invoke(ns)
    expect(accepted.map((a) => a.status)).toEqual(ns.map(() => 202))

    // kill once every task has recorded its first call, so that the killed node holds recorded steps. A call
    // made but not yet recorded is "in flight": the target seeing it is not enough.
    const deadline = Date.now() + 20_000
    const unrecorded = new Map(accepted.map((a, i) => [a.body.id as string, ns[i]!]))
    while (unrecorded.size > 0 && Date.now() < deadline) {
      // only the threads of tasks whose call the target has seen (no call, no record): fewer reads for the
      // nodes to serve while they run the tasks
      await Promise.all(
        [...unrecorded].filter(([, n]) => scenario!.callsTo(`t${n}-a`) > 0).map(async ([id]) => {
          const thread = await scenario!.call("GET", `/v1/tasks/${id}/thread`)
          if (thread.body.events.some((e: any) => e.type === "tool_call")) unrecorded.delete(id)
        })
      )
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(unrecorded.size).toBe(0)
    const killedAt = Date.now()
    await cluster.kill(1)

    // every accepted task ends; reads keep working through the proxy while a node is gone
    const ends = await scenario.ends(accepted)
    expect(ends.map((e) => e.status)).toEqual(ns.map(() => 200))
    expect(ends.map((e) => e.body.status)).toEqual(ns.map(() => "completed"))
    const threads = await Promise.all(accepted.map((a) => scenario!.call("GET", `/v1/tasks/${a.body.id}/thread`)))
    for (const thread of threads) {
      expect(thread.body.events.filter((e: any) => e.type === "tool_call").length).toBe(2)
    }
    // each first call was recorded before the kill: none was made again
    for (const n of ns) expect(scenario.callsTo(`t${n}-a`)).toBe(1)
    // a second call in flight on the killed node is not made again: the thread says its outcome is unknown,
    // and the target saw it once (made before the kill) or never (the node died first)
    const calls = await scenario.toolCalls(accepted)
    expect(notOnce(calls)).toEqual([])
    for (const c of calls.filter((c) => c.outcome === "unknown")) {
      for (const r of target.requests.filter((r) => r.path === `/pets/${c.pet}`)) {
        expect(r.at).toBeLessThanOrEqual(killedAt + 100)
      }
    }
  }, 180_000)
})
