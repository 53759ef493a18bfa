import { afterAll, describe, expect, it } from "vitest"
import { type Scenario, startScenario, steppedScript } from "../support/ClusterScenario.js"

let scenario: Scenario | undefined
afterAll(() => scenario?.stop())

describe("a connector call whose Connection entity is on a paused node (SIGSTOP)", () => {
  it("is answered once the entity's shard moves, and the node resumed late", async () => {
    scenario = await startScenario({
      nodes: 2,
      script: steppedScript(0),
      env: { SWITCHYARD_HUNG_NODE_AFTER: "8 seconds" }
    })
    // connections never used yet: the first call on node 0 asks each one's entity, wherever its shard is (with
    // eight of them, some on node 1's shards but for a chance of 1 in 256)
    const connectorPath = scenario.getPetPath.split("/connections/")[0]!
    const paths: Array<string> = []
    for (let i = 0; i < 8; i++) {
      const made = await scenario.callAt(0, "POST", `${connectorPath}/connections`, {
        name: `pets-${i}`,
        credentials: { type: "api_key", value: `k${i}` }
      })
      expect(made.status).toBe(201)
      paths.push(`${connectorPath}/connections/${made.body.id}/getPet`)
    }

    // its kernel keeps the paused node's sockets open: an ask sent to it is neither answered nor refused
    scenario.cluster.pause(1)
    const calls = Promise.all(
      paths.map((path, i) => scenario!.callAt(0, "POST", path, { path_params: { petId: `p${i}` } }))
    )
    // the paused node wakes as its shards have moved: it learns so late, with the asks it took still to answer
    await scenario.holdingEveryShard(0, 30_000)
    scenario.cluster.resume(1)
    const answers = await calls
    expect(answers.map((a) => a.status)).toEqual(paths.map(() => 200))
    expect(paths.map((_, i) => scenario!.callsTo(`p${i}`))).toEqual(paths.map(() => 1))
  }, 120_000)
})
