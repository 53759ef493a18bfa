import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { notOnce, type Scenario, startScenario } from "../support/ClusterScenario.js"
import { eventually } from "../support/Poll.js"
import { echo } from "../support/TargetServer.js"

// a tool call in flight when its node stops or its task is cancelled: finished and recorded, or abandoned

const CALL_MS = 2000

let scenario: Scenario
beforeAll(async () => {
  scenario = await startScenario({
    nodes: 2,
    script: [
      { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "{{input}}-a" } } }] },
      { text: "done: {{last_tool_result}}" }
    ]
  })
  // every call takes a while: long enough to stop a node or cancel a task while it is under way
  scenario.target.reply = async (request, response) => {
    await new Promise((r) => setTimeout(r, CALL_MS))
    echo(request, response)
  }
}, 120_000)
afterAll(() => scenario?.stop())

/** Until the target has seen `count` requests (the calls are under way). */
const callsArrived = (count: number) =>
  eventually(() => scenario.target.requests.length >= count || undefined, 20_000, `${count} calls`)

describe("a tool call under way", () => {
  it("is cancelled with its task: the run does not wait for it, and records no result", async () => {
    const [accepted] = await scenario.invoke([100])
    await callsArrived(1)
    const cancelled = await scenario.call("POST", `/v1/tasks/${accepted!.body.id}/cancel`)
    expect(cancelled.body.status).toBe("cancelled")
    // past the call's answer: a run that had waited for it would have recorded it by now
    await new Promise((r) => setTimeout(r, CALL_MS + 1000))
    const thread = await scenario.call("GET", `/v1/tasks/${accepted!.body.id}/thread`)
    expect(thread.body.events.map((e: any) => e.type)).toEqual(["user_message", "model_call", "cancelled"])
  })

  it("on a node stopped gracefully (SIGTERM) is finished and recorded first: the next owner replays it", async () => {
    const before = scenario.target.requests.length
    const ns = Array.from({ length: 12 }, (_, n) => n)
    const accepted = await scenario.invoke(ns)
    expect(accepted.map((a) => a.status)).toEqual(ns.map(() => 202))
    await callsArrived(before + ns.length)
    await scenario.cluster.nodes[1]!.process.stop("SIGTERM")

    const ends = await scenario.ends(accepted)
    expect(ends.map((e) => e.body.status)).toEqual(ns.map(() => "completed"))
    const calls = await scenario.toolCalls(accepted)
    expect(notOnce(calls)).toEqual([])
    // none left unknown: each was recorded by the node that made it, before it let its shards go
    expect(calls.map((c) => c.outcome)).toEqual(ns.map(() => "ok"))
  }, 120_000)
})
