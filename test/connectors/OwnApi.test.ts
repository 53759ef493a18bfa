import { Effect, Layer, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Principal } from "../../schema/Security.js"
import { SecretKey } from "../../src/config/SecretKey.js"
import { sealingContext } from "../../src/connectors/ConnectionEntityLive.js"
import { CredentialVault } from "../../src/connectors/CredentialVault.js"
import { ownOrigin } from "../../src/connectors/OwnApi.js"
import { CallerTokens } from "../../src/identity/CallerTokens.js"
import { addMember, call, withDatabase } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createConnection, createConnector, invoke, petstore } from "./support.js"

const SWITCHYARD = "5e1f0000-0000-4000-8000-000000000002"
// the key test nodes run with (test/support/TestNode.ts)
const secretKey = Layer.succeed(SecretKey, Redacted.make(new Uint8Array(Buffer.alloc(32, 7))))
const vault = Effect.runSync(CredentialVault.pipe(Effect.provide(CredentialVault.Default), Effect.provide(secretKey)))
const tokens = Effect.runSync(CallerTokens.pipe(Effect.provide(CallerTokens.Default), Effect.provide(secretKey)))

/**
 * Issue 19 item 5: the built-in Switchyard connector acts as its caller, never as a key stored by someone
 * else, and works under the default egress policy without opening it to loopback.
 */
describe("the built-in Switchyard connector", () => {
  let node: TestNode
  let owner: string
  let admin: Awaited<ReturnType<typeof addMember>>
  let member: Awaited<ReturnType<typeof addMember>>
  let connection: any

  beforeAll(async () => {
    // the default egress policy: no SWITCHYARD_EGRESS_ALLOW
    node = await startTestNode()
    owner = (await node.bootstrap()).api_key
    admin = await addMember(node, owner, "admin")
    member = await addMember(node, owner, "member")
    connection = await createConnection(node, admin.key, SWITCHYARD, {
      name: "switchyard",
      access_scope: "organizational"
    })
  })
  afterAll(() => node?.stop())

  const roleOf = async (userId: string) => {
    const members = await call(node, owner, "GET", "/v1/members")
    return members.body.items.find((m: any) => m.user.id === userId)?.role
  }

  it("lets an Admin read through it under the default egress policy, as that Admin", async () => {
    // twice: a second call must not take a fast path that skips acting as the caller
    for (let i = 0; i < 2; i++) {
      const me = await invoke(node, admin.key, SWITCHYARD, connection.id, "me")
      expect(me.status).toBe(200)
      const body = await me.json()
      expect({ user: body.user.id, role: body.role, key: body.key.id }).toEqual({
        user: admin.userId,
        role: "admin",
        key: admin.keyId
      })
    }
    const agents = await invoke(node, admin.key, SWITCHYARD, connection.id, "listAgents", {
      query_params: {},
      path_params: {}
    })
    expect(agents.status).toBe(200)
    expect(await agents.json()).toMatchObject({ items: [] })
  })

  it("refuses a Member making themselves Super admin through an Admin's org connection with 403", async () => {
    for (let i = 0; i < 2; i++) {
      const response = await invoke(node, member.key, SWITCHYARD, connection.id, "updateMember", {
        path_params: { user_id: member.userId },
        body_params: { role: "super_admin" }
      })
      expect(response.status).toBe(403)
      expect((await response.json()).error.code).toBe("forbidden")
    }
    expect(await roleOf(member.userId)).toBe("member")
    // and the Member is seen as the Member they are
    const me = await (await invoke(node, member.key, SWITCHYARD, connection.id, "me")).json()
    expect({ user: me.user.id, role: me.role }).toEqual({ user: member.userId, role: "member" })
  })

  it("ignores a key stored on a connection to it before stored keys were refused", async () => {
    const legacy = await createConnection(node, admin.key, SWITCHYARD, { name: "legacy" })
    // as an earlier release stored it: the Admin's own key, sealed for this connection
    await withDatabase(node, async (db) => {
      const { rows } = await db.query("SELECT organization_id FROM connections WHERE id = $1", [legacy.id])
      const { keyVersion, sealed } = vault.seal(
        { type: "api_key", value: admin.key },
        sealingContext({ organization_id: rows[0].organization_id, connector_id: SWITCHYARD as never, id: legacy.id })
      )
      const updated = await db.query(
        "UPDATE connections SET auth_type = 'api_key', security_scheme = 'apiKey', credentials = $1, key_version = $2 " +
          "WHERE id = $3",
        [sealed, keyVersion, legacy.id]
      )
      expect(updated.rowCount).toBe(1)
    })
    const response = await invoke(node, member.key, SWITCHYARD, legacy.id, "updateMember", {
      path_params: { user_id: member.userId },
      body_params: { role: "super_admin" }
    })
    expect(response.status).toBe(403)
    expect((await response.json()).error.code).toBe("forbidden")
    expect(await roleOf(member.userId)).toBe("member")
    const me = await (await invoke(node, member.key, SWITCHYARD, legacy.id, "me")).json()
    expect({ user: me.user.id, key: me.key.id }).toEqual({ user: member.userId, key: member.keyId })
  })

  it("keeps an agent's run within the agents its invoker's key may reach", async () => {
    const other = (await call(node, admin.key, "POST", "/v1/agents", {
      name: "Other",
      model: { provider: "scripted", script: [{ text: "other" }] }
    })).body
    // the agent reads another agent through the Switchyard connector, as its invoker
    const reader = (await call(node, admin.key, "POST", "/v1/agents", {
      name: "Reader",
      model: {
        provider: "scripted",
        script: [
          { tool_calls: [{ name: "getAgent", arguments: { path_params: { agent_id: other.id } } }] },
          { text: "saw: {{last_tool_result}}" }
        ]
      },
      skills: [{ connection_id: connection.id, operation_ids: ["getAgent"] }]
    })).body
    const limited = (await call(node, admin.key, "POST", "/v1/api-keys", {
      name: "reader only",
      kind: "organization",
      role: "builder",
      agent_ids: [reader.id]
    })).body.api_key
    const input = { input: { text: "look", user: { id: "u", email: "u@example.com" } } }
    const scoped = await call(node, limited, "POST", `/v1/agents/${reader.id}/invoke`, input)
    expect(scoped.body.status).toBe("completed")
    expect(scoped.body.result).toContain("not_found")
    expect(scoped.body.result).not.toContain("other")
    // the same agent invoked by a key that reaches every agent does read it
    const wide = await call(node, admin.key, "POST", `/v1/agents/${reader.id}/invoke`, input)
    expect(wide.body.status).toBe("completed")
    expect(wide.body.result).toContain(other.id)
  })

  it("refuses stored credentials and a server URL on its connections", async () => {
    const withKey = await call(node, admin.key, "POST", `/v1/tools/connectors/${SWITCHYARD}/connections`, {
      name: "with my key",
      credentials: { type: "api_key", value: admin.key }
    })
    expect(withKey.status).toBe(400)
    expect(withKey.body.error.code).toBe("credentials_not_accepted")
    const withUrl = await call(node, admin.key, "POST", `/v1/tools/connectors/${SWITCHYARD}/connections`, {
      name: "elsewhere",
      server_url: "https://example.com"
    })
    expect(withUrl.status).toBe(400)
    expect(withUrl.body.error.code).toBe("validation_failed")
    const update = await call(
      node,
      admin.key,
      "PATCH",
      `/v1/tools/connectors/${SWITCHYARD}/connections/${connection.id}`,
      {
        credentials: { type: "bearer", token: "t" }
      }
    )
    expect(update.status).toBe(400)
    expect(update.body.error.code).toBe("credentials_not_accepted")
    // it says so in the catalog: no credentials of its own
    const described = await call(node, admin.key, "GET", `/v1/tools/connectors/${SWITCHYARD}`)
    expect(described.body.auth_types).toEqual(["none"])
  })

  it("uploads a workspace file through its multipart operation, the file as a file part", async () => {
    const response = await invoke(node, admin.key, SWITCHYARD, connection.id, "uploadFile", {
      body_params: { name: "notes/hello.md", file: "# Hello\n" }
    })
    expect(response.status).toBe(201)
    const file = await response.json()
    expect({ name: file.name, size: file.size }).toEqual({ name: "notes/hello.md", size: 8 })
    const content = await node.fetch(`/v1/files/${file.id}/content`, { apiKey: admin.key })
    expect(await content.text()).toBe("# Hello\n")
  })

  it("does not let the caller put a key of their own on the call", async () => {
    const response = await invoke(node, member.key, SWITCHYARD, connection.id, "me", {
      headers: { "x-api-key": admin.key }
    })
    expect(response.status).toBe(400)
    expect((await response.json()).error.code).toBe("header_not_allowed")
  })

  it("leaves the egress guard closed to this node's own address for every other connector", async () => {
    const self = await createConnector(node, admin.key, petstore(node.baseUrl), { name: "Self, by URL" })
    const conn = await createConnection(node, admin.key, self.id, {
      name: "x",
      credentials: { type: "api_key", value: "k" }
    })
    const response = await invoke(node, admin.key, self.id, conn.id, "listPets")
    expect(response.status).toBe(403)
    expect((await response.json()).error.code).toBe("egress_refused")
  })
})

describe("caller tokens on REST", () => {
  let node: TestNode
  let principal: Principal

  beforeAll(async () => {
    node = await startTestNode()
    const owner = (await node.bootstrap()).api_key
    const member = await addMember(node, owner, "member")
    const me = (await call(node, member.key, "GET", "/v1/me")).body
    principal = {
      organizationId: me.organization.id,
      userId: member.userId,
      keyId: member.keyId,
      role: "member",
      agentIds: null
    } as Principal
  })
  afterAll(() => node?.stop())

  const asToken = (token: string) => call(node, token, "GET", "/v1/me")

  it("accepts one minted for its principal, as exactly that principal", async () => {
    const response = await asToken(Redacted.value(tokens.mint(principal)))
    expect(response.status).toBe(200)
    expect({ user: response.body.user.id, role: response.body.role }).toEqual({
      user: principal.userId,
      role: "member"
    })
  })

  it("refuses an expired, altered or forged one with 401", async () => {
    const expired = Redacted.value(tokens.mint(principal, Date.now() - 61_000))
    expect((await asToken(expired)).status).toBe(401)
    const good = Redacted.value(tokens.mint(principal))
    const [payload, mac] = good.slice(4).split(".")
    const claims = JSON.parse(Buffer.from(payload!, "base64url").toString())
    claims.p.role = "super_admin"
    const altered = `syc_${Buffer.from(JSON.stringify(claims)).toString("base64url")}.${mac}`
    const refused = await asToken(altered)
    expect(refused.status).toBe(401)
    expect(refused.body.error.code).toBe("invalid_api_key")
    expect((await asToken(`syc_${payload}.AAAA`)).status).toBe(401)
  })
})

describe("ownOrigin", () => {
  it("reaches a wildcard listen address on loopback and brackets IPv6", () => {
    expect(ownOrigin("0.0.0.0", 8080)).toBe("http://127.0.0.1:8080")
    expect(ownOrigin("::", 8080)).toBe("http://[::1]:8080")
    expect(ownOrigin("127.0.0.1", 3000)).toBe("http://127.0.0.1:3000")
    expect(ownOrigin("fd00::5", 3000)).toBe("http://[fd00::5]:3000")
    expect(ownOrigin("node1", 3000)).toBe("http://node1:3000")
  })
})
