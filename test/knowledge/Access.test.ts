import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, auditEvents, call, expectError } from "../access/support.js"
import { createAgent } from "../agents/support.js"
import { uploaded } from "../files/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createBase, ready, search } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const scripted = { model: { provider: "scripted", script: [{ text: "ok" }] } }

describe("who may do what with knowledge bases", () => {
  it("Members read and search; Builders and above write; a key limited to agents reads but changes no base", async () => {
    const org = await node.bootstrap()
    const admin = org.api_key
    const base = await createBase(node, admin, { name: "Team wiki" })
    await ready(node, admin, base.id, { name: "faq.md", text: "# FAQ\n\nThe office opens at eight." })
    const member = await addMember(node, admin, "member")
    const builder = await addMember(node, admin, "builder")

    expect((await call(node, member.key, "GET", "/v1/knowledge-bases")).body.items.map((b: any) => b.id)).toEqual([
      base.id
    ])
    expect((await search(node, member.key, base.id, "office"))[0].document_name).toBe("faq.md")
    expect((await call(node, member.key, "GET", `/v1/knowledge-bases/${base.id}/documents`)).status).toBe(200)
    expectError(await call(node, member.key, "POST", "/v1/knowledge-bases", { name: "Mine" }), 403, "forbidden")
    expectError(
      await call(node, member.key, "POST", `/v1/knowledge-bases/${base.id}/documents`, { name: "x", text: "y" }),
      403,
      "forbidden"
    )
    expectError(await call(node, member.key, "DELETE", `/v1/knowledge-bases/${base.id}`), 403, "forbidden")
    expectError(
      await call(node, member.key, "PATCH", `/v1/knowledge-bases/${base.id}`, { name: "Z" }),
      403,
      "forbidden"
    )

    const built = await createBase(node, builder.key, { name: "Builder's" })
    await ready(node, builder.key, built.id, { name: "n.txt", text: "builders write" })

    // a key limited to one agent: reads the organization's bases, changes none
    const agent = await createAgent(node, admin, { name: "Scoped", ...scripted })
    const limited = await call(node, admin, "POST", "/v1/api-keys", {
      name: "limited",
      kind: "organization",
      role: "builder",
      agent_ids: [agent.id]
    })
    expect(limited.status).toBe(201)
    const key = limited.body.api_key
    expect((await call(node, key, "GET", `/v1/knowledge-bases/${base.id}`)).status).toBe(200)
    expectError(await call(node, key, "POST", "/v1/knowledge-bases", { name: "Nope" }), 403, "forbidden")
    // …but it attaches a base to its own agent, not to another
    expect((await call(node, key, "PUT", `/v1/agents/${agent.id}/knowledge-bases/${base.id}`)).status).toBe(204)
    const other = await createAgent(node, admin, { name: "Other", ...scripted })
    expectError(await call(node, key, "PUT", `/v1/agents/${other.id}/knowledge-bases/${base.id}`), 404, "not_found")

    // refusals are recorded
    const denied = (await auditEvents(node, org.organization_id)).filter((e: any) => e.action === "ACCESS_DENIED")
    expect(denied.length).toBeGreaterThan(0)
  })

  it("attach, list and detach an agent's bases (Builder+, audited once per change)", async () => {
    const org = await node.bootstrap()
    const admin = org.api_key
    const agent = await createAgent(node, admin, { name: "Reader", ...scripted })
    const a = await createBase(node, admin, { name: "A" })
    const b = await createBase(node, admin, { name: "B" })
    const member = await addMember(node, admin, "member")
    expectError(await call(node, member.key, "PUT", `/v1/agents/${agent.id}/knowledge-bases/${a.id}`), 403, "forbidden")

    for (const id of [a.id, b.id, a.id]) {
      expect((await call(node, admin, "PUT", `/v1/agents/${agent.id}/knowledge-bases/${id}`)).status).toBe(204)
    }
    const listed = await call(node, member.key, "GET", `/v1/agents/${agent.id}/knowledge-bases`)
    expect(listed.body.items.map((x: any) => x.name)).toEqual(["A", "B"])
    expect((await call(node, admin, "DELETE", `/v1/agents/${agent.id}/knowledge-bases/${a.id}`)).status).toBe(204)
    expectError(await call(node, admin, "DELETE", `/v1/agents/${agent.id}/knowledge-bases/${a.id}`), 404, "not_found")
    expect(
      (await call(node, admin, "GET", `/v1/agents/${agent.id}/knowledge-bases`)).body.items.map((x: any) => x.name)
    )
      .toEqual(["B"])
    // deleting a base detaches it
    expect((await call(node, admin, "DELETE", `/v1/knowledge-bases/${b.id}`)).status).toBe(204)
    expect((await call(node, admin, "GET", `/v1/agents/${agent.id}/knowledge-bases`)).body.items).toEqual([])
    expectError(await call(node, admin, "PUT", `/v1/agents/${agent.id}/knowledge-bases/${b.id}`), 404, "not_found")
    expectError(
      await call(node, admin, "PUT", `/v1/agents/not-an-agent/knowledge-bases/${a.id}`),
      400,
      "validation_failed"
    )

    const actions = (await auditEvents(node, org.organization_id))
      .filter((e: any) => e.action.endsWith("_KNOWLEDGE_BASE") && e.targets[0].type === "agent")
      .map((e: any) => [e.action, e.targets[1].name])
    expect(actions).toEqual([["ATTACH_KNOWLEDGE_BASE", "A"], ["ATTACH_KNOWLEDGE_BASE", "B"], [
      "DETACH_KNOWLEDGE_BASE",
      "A"
    ]])
  })

  it("no organization reaches another's bases, documents, files or agents", async () => {
    const one = await node.bootstrap()
    const two = await node.bootstrap()
    const base = await createBase(node, one.api_key, { name: "Secret plans" })
    const doc = await ready(node, one.api_key, base.id, { name: "plan.txt", text: "the launch is in june" })
    const oneAgent = await createAgent(node, one.api_key, { name: "One", ...scripted })
    const twoAgent = await createAgent(node, two.api_key, { name: "Two", ...scripted })
    const twoBase = await createBase(node, two.api_key, { name: "Secret plans" }) // same name, other organization
    const oneFile = await uploaded(node, one.api_key, "private.md", "# Private\n\nsalaries")
    const k = two.api_key

    expect((await call(node, k, "GET", "/v1/knowledge-bases")).body.items.map((b: any) => b.id)).toEqual([twoBase.id])
    for (
      const [method, path, body] of [
        ["GET", `/v1/knowledge-bases/${base.id}`, undefined],
        ["PATCH", `/v1/knowledge-bases/${base.id}`, { name: "mine now" }],
        ["DELETE", `/v1/knowledge-bases/${base.id}`, undefined],
        ["GET", `/v1/knowledge-bases/${base.id}/documents`, undefined],
        ["POST", `/v1/knowledge-bases/${base.id}/documents`, { name: "x", text: "y" }],
        ["GET", `/v1/knowledge-bases/${base.id}/documents/${doc.id}`, undefined],
        ["DELETE", `/v1/knowledge-bases/${base.id}/documents/${doc.id}`, undefined],
        ["GET", `/v1/knowledge-bases/${twoBase.id}/documents/${doc.id}`, undefined],
        ["POST", `/v1/knowledge-bases/${base.id}/search`, { query: "launch" }],
        ["PUT", `/v1/agents/${twoAgent.id}/knowledge-bases/${base.id}`, undefined],
        ["PUT", `/v1/agents/${oneAgent.id}/knowledge-bases/${twoBase.id}`, undefined],
        ["GET", `/v1/agents/${oneAgent.id}/knowledge-bases`, undefined]
      ] as const
    ) {
      expectError(await call(node, k, method, path, body), 404, "not_found")
    }
    expectError(
      await call(node, k, "POST", `/v1/knowledge-bases/${twoBase.id}/documents`, { name: "x", file_id: oneFile.id }),
      400,
      "unknown_file"
    )
    // nothing of the first organization's changed
    expect((await search(node, one.api_key, base.id, "launch"))[0].document_id).toBe(doc.id)
    expect(await search(node, k, twoBase.id, "launch")).toEqual([])
  })
})
