import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Scenario, startScenario } from "../support/ClusterScenario.js"
import { eventually, startOtlpReceiver } from "./support.js"

type Receiver = Awaited<ReturnType<typeof startOtlpReceiver>>

/**
 * A task runs on the node that accepted it (TaskPlacement); what crosses nodes is a message to its entity.
 * An approval decided on the other node resumes the task through one: the decision's request and the run it
 * resumes must be one trace, with spans from both nodes.
 */
describe("one trace per request across nodes (issue 23)", () => {
  let receiver: Receiver
  let scenario: Scenario

  beforeAll(async () => {
    receiver = await startOtlpReceiver()
    scenario = await startScenario({
      nodes: 2,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_SERVICE_NAME: "switchyard-cluster-test"
      },
      script: [{ text: "unused" }]
    })
  }, 120_000)
  afterAll(async () => {
    await scenario?.stop()
    await receiver?.close()
  })

  it("an approval decided on one node resumes the task on the other in the decision's trace", async () => {
    const connectionId = scenario.getPetPath.split("/")[6]!
    const skill = await scenario.callAt(0, "POST", "/v1/skills", {
      name: "guarded pets",
      visibility: "organization",
      actions: [{ connection_id: connectionId, operation_id: "getPet", requires_approval: true }]
    })
    expect(skill.status).toBe(201)
    expect((await scenario.callAt(0, "POST", `/v1/skills/${skill.body.id}/publish`)).status).toBe(200)
    const agent = await scenario.callAt(0, "POST", "/v1/agents", {
      name: "guarded",
      model: {
        provider: "scripted",
        script: [
          { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "9" } } }] },
          { text: "got: {{last_tool_result}}" }
        ]
      }
    })
    expect(agent.status).toBe(201)
    expect((await scenario.callAt(0, "PUT", `/v1/agents/${agent.body.id}/skills/${skill.body.id}`)).status).toBe(200)

    // accepted (and so run) by node 0
    const accepted = await scenario.callAt(0, "POST", `/v1/agents/${agent.body.id}/invoke?asynchronous=true`, {
      input: { text: "go", user: { id: "u", email: "u@example.com" } }
    })
    expect(accepted.status).toBe(202)
    let approval: { id: string } | undefined
    for (const deadline = Date.now() + 20_000; approval === undefined && Date.now() < deadline;) {
      approval = (await scenario.callAt(1, "GET", `/v1/approvals?task_id=${accepted.body.id}`)).body.items?.[0]
      if (approval === undefined) await new Promise((r) => setTimeout(r, 100))
    }
    expect(approval).toBeDefined()
    // decided on node 1
    const decided = await scenario.callAt(1, "POST", `/v1/approvals/${approval!.id}/approve`, {})
    expect(decided.status).toBe(200)
    const ended = await scenario.callAt(1, "GET", `/v1/tasks/${accepted.body.id}?wait=30`)
    expect(ended.body.status).toBe("completed")

    const { call, server } = await eventually(() => {
      const call = receiver.spans.find((s) => s.name === "connector getPet" && s.traceId !== undefined)
      if (call === undefined) return undefined
      const server = receiver.spans.find((s) =>
        s.traceId === call.traceId && s.kind === 2 && s.attributes["http.request.method"] === "POST"
      )
      return server === undefined ? undefined : { call, server }
    }, 20_000)
    expect(server.attributes["http.route"]).toMatch(/^\/v1\/approvals\/:\w+\/approve$/)
    expect(server.instance).toBeDefined()
    expect(call.instance).toBeDefined()
    expect(call.instance).not.toBe(server.instance)
  }, 120_000)
})
