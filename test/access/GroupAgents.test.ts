import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { addMember, call, expectError, scriptedAgent } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const invoke = (key: string, agentId: string) =>
  call(node, key, "POST", `/v1/agents/${agentId}/invoke`, {
    input: { text: "hi", user: { id: "u", email: "u@example.com" } }
  })

describe("a group's default agents", () => {
  it("limit its Members to those agents; Builders and Members of groups without agents keep them all", async () => {
    const admin = (await node.bootstrap()).api_key
    const allowed = (await call(node, admin, "POST", "/v1/agents", scriptedAgent("Allowed"))).body
    const other = (await call(node, admin, "POST", "/v1/agents", scriptedAgent("Other"))).body
    const group = (await call(node, admin, "POST", "/v1/groups", { name: "Support", agent_ids: [allowed.id] })).body
    const member = await addMember(node, admin, "member")
    const builder = await addMember(node, admin, "builder")
    const loner = await addMember(node, admin, "member")
    for (const person of [member, builder]) {
      expect((await call(node, admin, "POST", `/v1/groups/${group.id}/members`, { user_id: person.userId })).status)
        .toBe(201)
    }
    const listed = (key: string) =>
      call(node, key, "GET", "/v1/agents").then((r) => r.body.items.map((a: any) => a.id).sort())

    expect(await listed(member.key)).toEqual([allowed.id])
    expect((await invoke(member.key, allowed.id)).body.status).toBe("completed")
    expectError(await invoke(member.key, other.id), 404, "not_found")
    expect(await listed(builder.key)).toEqual([allowed.id, other.id].sort())
    expect((await invoke(builder.key, other.id)).body.status).toBe("completed")
    expect(await listed(loner.key)).toEqual([allowed.id, other.id].sort())
  })
})
