import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, auditEvents, call, expectError, orgKey, scriptedAgent } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { uploaded, uploadRaw } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const asJson = async (r: Response) => ({ status: r.status, headers: r.headers, body: await r.json() })

/** An organization with two agents and a file in each scope: the organization's, agent A's, agent B's. */
const world = async () => {
  const org = await node.bootstrap()
  const admin = org.api_key
  const agentA = (await call(node, admin, "POST", "/v1/agents", scriptedAgent("A"))).body
  const agentB = (await call(node, admin, "POST", "/v1/agents", scriptedAgent("B"))).body
  const shared = await uploaded(node, admin, "shared.txt", "for everyone")
  const ofA = await uploaded(node, admin, "notes.txt", "A's notes", `&agent_id=${agentA.id}`)
  const ofB = await uploaded(node, admin, "notes.txt", "B's notes", `&agent_id=${agentB.id}`)
  return { org, admin, agentA, agentB, shared, ofA, ofB }
}

describe("who may read and write workspace files", () => {
  it("Members read every file; only Builders and above upload and delete (403, audited as ACCESS_DENIED)", async () => {
    const w = await world()
    const member = await addMember(node, w.admin, "member")
    const builder = await addMember(node, w.admin, "builder")
    const listed = (await call(node, member.key, "GET", "/v1/files")).body.items
    expect(listed.map((f: any) => [f.name, f.scope])).toEqual([
      ["notes.txt", "agent"],
      ["notes.txt", "agent"],
      ["shared.txt", "organization"]
    ])
    expect((await call(node, member.key, "GET", `/v1/files/${w.ofB.id}`)).status).toBe(200)
    expect((await call(node, member.key, "GET", `/v1/files/${w.shared.id}/content`)).body).toBe("for everyone")
    expectError(await asJson(await uploadRaw(node, member.key, "?name=m.txt", "x")), 403, "forbidden")
    expectError(await call(node, member.key, "DELETE", `/v1/files/${w.shared.id}`), 403, "forbidden")
    const denied = (await auditEvents(node, w.org.organization_id)).filter((e: any) => e.action === "ACCESS_DENIED")
    expect(denied.map((e: any) => e.targets[0].id)).toEqual(["POST /v1/files", `DELETE /v1/files/${w.shared.id}`])

    const mine = await uploaded(node, builder.key, "from-builder.txt", "b")
    expect(mine.owner).toEqual({ type: "user", id: builder.userId })
    expect((await call(node, builder.key, "DELETE", `/v1/files/${w.shared.id}`)).status).toBe(204)
  })

  it("an organization key limited to agents sees the organization's files and its agents', and writes only there", async () => {
    const w = await world()
    const limited = await call(node, w.admin, "POST", "/v1/api-keys", {
      name: "only A",
      kind: "organization",
      role: "builder",
      agent_ids: [w.agentA.id]
    })
    const key = limited.body.api_key as string
    const seen = (await call(node, key, "GET", "/v1/files")).body.items.map((f: any) => f.id)
    expect(seen.sort()).toEqual([w.shared.id, w.ofA.id].sort())
    expectError(await call(node, key, "GET", `/v1/files/${w.ofB.id}`), 404, "not_found")
    expectError(await call(node, key, "GET", `/v1/files/${w.ofB.id}/content`), 404, "not_found")
    expectError(await call(node, key, "DELETE", `/v1/files/${w.ofB.id}`), 404, "not_found")
    // an agent it may not use is absent, as in the other listings filtered by agent
    expectError(await call(node, key, "GET", `/v1/files?agent_id=${w.agentB.id}`), 404, "not_found")
    // it reads the organization's files, but does not change them
    expect((await call(node, key, "GET", `/v1/files/${w.shared.id}/content`)).status).toBe(200)
    expectError(await call(node, key, "DELETE", `/v1/files/${w.shared.id}`), 403, "forbidden")
    expectError(await asJson(await uploadRaw(node, key, "?name=org-wide.txt", "x")), 403, "forbidden")
    expectError(
      await asJson(await uploadRaw(node, key, `?name=x.txt&agent_id=${w.agentB.id}`, "x")),
      400,
      "unknown_agent"
    )
    const written = await uploaded(node, key, "out.txt", "A's output", `&agent_id=${w.agentA.id}`)
    expect(written).toMatchObject({ scope: "agent", agent_id: w.agentA.id, owner: { type: "api_key" } })
    expect((await call(node, key, "DELETE", `/v1/files/${w.ofA.id}`)).status).toBe(204)
  })

  it("names are unique per scope: the same name in two agents' workspaces and the organization's", async () => {
    const w = await world()
    const again = await uploaded(node, w.admin, "notes.txt", "the organization's notes")
    expect(again.scope).toBe("organization")
    const byAgent = (await call(node, w.admin, "GET", `/v1/files?agent_id=${w.agentA.id}`)).body.items
    expect(byAgent.map((f: any) => f.id)).toEqual([w.ofA.id])
    expectError(
      await asJson(await uploadRaw(node, w.admin, `?name=notes.txt&agent_id=${w.agentA.id}`, "x")),
      409,
      "file_exists"
    )
  })
})

describe("a deleted agent's files", () => {
  it("stay listed and can still be deleted, though nothing new can be written there", async () => {
    const w = await world()
    expect((await call(node, w.admin, "DELETE", `/v1/agents/${w.agentA.id}`)).status).toBeLessThan(300)
    expect((await call(node, w.admin, "GET", `/v1/files/${w.ofA.id}`)).status).toBe(200)
    const listed = await call(node, w.admin, "GET", `/v1/files?agent_id=${w.agentA.id}`)
    expect(listed.body.items.map((f: any) => f.id)).toEqual([w.ofA.id])
    expectError(
      await asJson(await uploadRaw(node, w.admin, `?name=late.txt&agent_id=${w.agentA.id}`, "x")),
      400,
      "unknown_agent"
    )
    expect((await call(node, w.admin, "DELETE", `/v1/files/${w.ofA.id}`)).status).toBe(204)
  })
})

describe("workspace files across organizations", () => {
  it("another organization's Super admin can neither see, read, delete nor write into this one's files", async () => {
    const w = await world()
    const other = (await node.bootstrap("Other organization")).api_key
    expect((await call(node, other, "GET", "/v1/files")).body).toEqual({ items: [], next_cursor: null })
    expectError(await call(node, other, "GET", `/v1/files?agent_id=${w.agentA.id}`), 404, "not_found")
    expect((await call(node, other, "GET", "/v1/files?prefix=notes")).body.items).toEqual([])
    for (const file of [w.shared, w.ofA]) {
      expectError(await call(node, other, "GET", `/v1/files/${file.id}`), 404, "not_found")
      expectError(await call(node, other, "GET", `/v1/files/${file.id}/content`), 404, "not_found")
      expectError(await call(node, other, "DELETE", `/v1/files/${file.id}`), 404, "not_found")
    }
    expectError(
      await asJson(await uploadRaw(node, other, `?name=planted.txt&agent_id=${w.agentA.id}`, "x")),
      400,
      "unknown_agent"
    )
    // its own file of the same name is its own
    const own = await uploaded(node, other, "shared.txt", "mine")
    expect(own.id).not.toBe(w.shared.id)
    expect((await call(node, w.admin, "GET", `/v1/files/${w.shared.id}/content`)).body).toBe("for everyone")
    // a cursor made in one organization is a position in a listing, never a way into another's files
    const page = (await call(node, w.admin, "GET", "/v1/files?limit=1")).body
    const paged = (await call(node, other, "GET", `/v1/files?cursor=${page.next_cursor}`)).body.items
    expect(paged.map((f: any) => f.id)).toEqual([own.id])
  })
})

describe("an organization key's owner and role", () => {
  it("a Member organization key reads; a Builder organization key writes as itself", async () => {
    const w = await world()
    const reader = await orgKey(node, w.admin, "member")
    expect((await call(node, reader.key, "GET", `/v1/files/${w.shared.id}`)).status).toBe(200)
    expectError(await asJson(await uploadRaw(node, reader.key, "?name=r.txt", "x")), 403, "forbidden")
    const writer = await orgKey(node, w.admin, "builder")
    const file = await uploaded(node, writer.key, "w.txt", "x")
    expect(file.owner).toEqual({ type: "api_key", id: writer.keyId })
  })
})
