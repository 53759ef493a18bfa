import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import eraseArchivedCredentials from "../../src/db/migrations/0033_erase_archived_credentials.js"
import { auditEvents } from "../access/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createConnection, createConnector, invoke, json, petstore } from "./support.js"

let node: TestNode
let target: TargetServer
beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
  target = await startTargetServer()
})
afterAll(async () => {
  await node?.stop()
  await target?.close()
})

const lastRequest = () => target.requests[target.requests.length - 1]!

describe("credentials per security scheme", () => {
  const schemes: Array<
    [string, Record<string, unknown>, Record<string, unknown>, (r: ReturnType<typeof lastRequest>) => void]
  > = [
    [
      "API key in a header",
      { k: { type: "apiKey", in: "header", name: "X-Key" } },
      { type: "api_key", value: "hdr-secret-1" },
      (r) => expect(r.headers["x-key"]).toBe("hdr-secret-1")
    ],
    [
      "API key in the query",
      { k: { type: "apiKey", in: "query", name: "api_key" } },
      { type: "api_key", value: "qry secret 1" },
      (r) => expect(r.query.get("api_key")).toBe("qry secret 1")
    ],
    [
      "API key in a cookie",
      { k: { type: "apiKey", in: "cookie", name: "session" } },
      { type: "api_key", value: "cookie-secret-1" },
      (r) => expect(r.headers.cookie).toBe("session=cookie-secret-1")
    ],
    [
      "HTTP bearer",
      { b: { type: "http", scheme: "bearer" } },
      { type: "bearer", token: "bearer-secret-1" },
      (r) => expect(r.headers.authorization).toBe("Bearer bearer-secret-1")
    ],
    [
      "HTTP basic",
      { b: { type: "http", scheme: "basic" } },
      { type: "basic", username: "ada", password: "pw:secret-1" },
      (r) => expect(r.headers.authorization).toBe(`Basic ${Buffer.from("ada:pw:secret-1").toString("base64")}`)
    ]
  ]
  it.each(schemes)("applies %s", async (_, security, credentials, check) => {
    const apiKey = (await node.bootstrap()).api_key
    const connector = await createConnector(node, apiKey, petstore(target.url, security))
    const connection = await createConnection(node, apiKey, connector.id, { name: "c", credentials })
    expect(JSON.stringify(connection)).not.toMatch(
      /hdr-secret-1|qry secret 1|cookie-secret-1|bearer-secret-1|pw:secret-1/
    )
    const response = await invoke(node, apiKey, connector.id, connection.id, "listPets")
    expect(response.status).toBe(200)
    check(lastRequest())
  })

  it("puts an API key where the document's security asks for it, whatever the schemes are called", async () => {
    const apiKey = (await node.bootstrap()).api_key
    const spec = {
      ...petstore(target.url, {
        q: { type: "apiKey", in: "query", name: "token" },
        headerKey: { type: "apiKey", in: "header", name: "X-Api-Key" }
      }),
      security: [{ headerKey: [] }]
    }
    const connector = await createConnector(node, apiKey, spec)
    const connection = await createConnection(node, apiKey, connector.id, {
      name: "c",
      credentials: { type: "api_key", value: "where-it-belongs" }
    })
    expect((await invoke(node, apiKey, connector.id, connection.id, "listPets")).status).toBe(200)
    expect(lastRequest().headers["x-api-key"]).toBe("where-it-belongs")
    expect(lastRequest().query.get("token")).toBeNull()
  })

  it("refuses credentials the connector does not accept, listing what it does", async () => {
    const apiKey = (await node.bootstrap()).api_key
    const connector = await createConnector(node, apiKey, petstore(target.url))
    const response = await node.fetch(`/v1/tools/connectors/${connector.id}/connections`, {
      ...json({ name: "c", credentials: { type: "basic", username: "a", password: "b" } }),
      apiKey
    })
    expect(response.status).toBe(400)
    const body = await response.json()
    expect(body.error.code).toBe("credentials_not_accepted")
    expect(body.error.message).toContain("api_key")
  })

  it("stores credentials encrypted and never returns them", async () => {
    const apiKey = (await node.bootstrap()).api_key
    const connector = await createConnector(node, apiKey, petstore(target.url))
    const connection = await createConnection(node, apiKey, connector.id, {
      name: "c",
      credentials: { type: "api_key", value: "super-secret-value" }
    })
    const db = new pg.Client({ connectionString: node.databaseUrl })
    await db.connect()
    try {
      const { rows } = await db.query("SELECT credentials::text AS c, key_version FROM connections WHERE id = $1", [
        connection.id
      ])
      expect(rows[0].key_version).toBe(1)
      expect(rows[0].c).not.toContain("super-secret-value")
      expect(Buffer.from(rows[0].c.slice(2), "hex").toString("utf8")).not.toContain("super-secret")
      // a sealed secret copied onto another connection does not open there
      const other = await createConnection(node, apiKey, connector.id, {
        name: "d",
        credentials: { type: "api_key", value: "other" }
      })
      await db.query(
        "UPDATE connections SET credentials = (SELECT credentials FROM connections WHERE id = $1) WHERE id = $2",
        [connection.id, other.id]
      )
      const response = await invoke(node, apiKey, connector.id, other.id, "listPets")
      expect(response.status).toBe(500)
      expect(JSON.stringify(await response.json())).not.toContain("super-secret")
    } finally {
      await db.end()
    }
    for (
      const path of [
        `/v1/tools/connectors/${connector.id}/connections`,
        `/v1/tools/connectors/${connector.id}`,
        "/v1/tools?type=connector"
      ]
    ) {
      expect(await (await node.fetch(path, { apiKey })).text()).not.toContain("super-secret-value")
    }
  })
})

/** A new Member of the admin's organization, their personal key, and a personal connection of theirs. */
const personalConnection = async (adminKey: string, connectorId: string, who: string) => {
  const member = await (await node.fetch("/v1/members", {
    ...json({ email: `${who}-${Date.now()}@example.com` }),
    apiKey: adminKey
  })).json()
  const memberKey = (await (await node.fetch("/v1/api-keys", {
    ...json({ name: "m", user_id: member.user.id }),
    apiKey: adminKey
  })).json()).api_key
  const personal = await createConnection(node, memberKey, connectorId, {
    name: "mine",
    access_scope: "personal",
    credentials: { type: "api_key", value: "member-key" }
  })
  return { member, memberKey, personal }
}

describe("connection scope and isolation", () => {
  it("keeps a personal connection private to its owner", async () => {
    const org = await node.bootstrap()
    const connector = await createConnector(node, org.api_key, petstore(target.url))
    const { member, memberKey, personal } = await personalConnection(org.api_key, connector.id, "p")
    expect(personal).toMatchObject({ access_scope: "personal", owner_user_id: member.user.id })
    // the owner sees and uses it; the admin does not even see it
    expect((await invoke(node, memberKey, connector.id, personal.id, "listPets")).status).toBe(200)
    expect((await invoke(node, org.api_key, connector.id, personal.id, "listPets")).status).toBe(404)
    const adminView =
      await (await node.fetch(`/v1/tools/connectors/${connector.id}/connections`, { apiKey: org.api_key })).json()
    expect(adminView.map((c: any) => c.id)).not.toContain(personal.id)
    const memberView = await (await node.fetch(`/v1/tools?type=connector&query=Pet`, { apiKey: memberKey })).json()
    expect(memberView.items[0].connections.map((c: any) => c.id)).toContain(personal.id)
    // members may not create organizational connections
    const orgConn = await node.fetch(`/v1/tools/connectors/${connector.id}/connections`, {
      ...json({ name: "x", credentials: { type: "api_key", value: "v" } }),
      apiKey: memberKey
    })
    expect(orgConn.status).toBe(403)
  })

  it("migration 0033 erases what archives and deletes made before they erased credentials; nothing else", async () => {
    const org = await node.bootstrap()
    const archived = await createConnector(node, org.api_key, petstore(target.url))
    const kept = await createConnector(node, org.api_key, petstore(target.url))
    const connection = (connectorId: string, name: string) =>
      createConnection(node, org.api_key, connectorId, { name, credentials: { type: "api_key", value: "s" } })
    const [ofArchived, deletedEarlier, live] = [
      await connection(archived.id, "of an archived connector"),
      await connection(kept.id, "deleted, its credentials kept"),
      await connection(kept.id, "live")
    ]
    const db = new pg.Client({ connectionString: node.databaseUrl })
    await db.connect()
    try {
      // as an archive and a delete left them before they erased credentials
      await db.query("UPDATE connectors SET archived_at = now() WHERE id = $1", [archived.id])
      await db.query("UPDATE connections SET deleted_at = now() WHERE id = $1", [deletedEarlier.id])
      await Effect.runPromise(
        eraseArchivedCredentials.pipe(
          Effect.provide(PgClient.layer({ url: Redacted.make(node.databaseUrl) })),
          Effect.scoped
        )
      )
      const rows = (await db.query(
        "SELECT id, deleted_at IS NOT NULL AS deleted, credentials IS NULL AS erased FROM connections WHERE id = ANY($1)",
        [[ofArchived.id, deletedEarlier.id, live.id]]
      )).rows
      expect(rows.find((r) => r.id === ofArchived.id)).toMatchObject({ deleted: true, erased: true })
      expect(rows.find((r) => r.id === deletedEarlier.id)).toMatchObject({ deleted: true, erased: true })
      expect(rows.find((r) => r.id === live.id)).toMatchObject({ deleted: false, erased: false })
    } finally {
      await db.end()
    }
    expect((await invoke(node, org.api_key, live.connector_id, live.id, "listPets")).status).toBe(200)
  })

  it("deletes a member's personal connections, credentials erased, when they are removed; others stay", async () => {
    const org = await node.bootstrap()
    const connector = await createConnector(node, org.api_key, petstore(target.url))
    const { member, personal } = await personalConnection(org.api_key, connector.id, "leaver")
    const shared = await createConnection(node, org.api_key, connector.id, {
      name: "shared",
      credentials: { type: "api_key", value: "org-secret" }
    })
    const removed = await node.fetch(`/v1/members/${member.user.id}`, { method: "DELETE", apiKey: org.api_key })
    expect(removed.status).toBe(204)
    const db = new pg.Client({ connectionString: node.databaseUrl })
    await db.connect()
    try {
      const rows = (await db.query(
        "SELECT id, deleted_at IS NOT NULL AS deleted, credentials IS NULL AS erased FROM connections WHERE id = ANY($1)",
        [[personal.id, shared.id]]
      )).rows
      expect(rows.find((r) => r.id === personal.id)).toMatchObject({ deleted: true, erased: true })
      expect(rows.find((r) => r.id === shared.id)).toMatchObject({ deleted: false, erased: false })
      const audit = (await db.query(
        "SELECT details FROM audit_events WHERE organization_id = $1 AND action = 'REMOVE_MEMBER'",
        [org.organization_id]
      )).rows
      expect(audit.at(-1)?.details.deleted_connections).toEqual([personal.id])
    } finally {
      await db.end()
    }
    expect((await invoke(node, org.api_key, connector.id, shared.id, "listPets")).status).toBe(200)
  })

  it("never lets another organization read, use, change or delete a connection", async () => {
    const a = await node.bootstrap()
    const b = await node.bootstrap()
    const connector = await createConnector(node, a.api_key, petstore(target.url))
    const conn = await createConnection(node, a.api_key, connector.id, {
      name: "a's",
      credentials: { type: "api_key", value: "a-key" }
    })
    const base = `/v1/tools/connectors/${connector.id}`
    expect((await node.fetch(base, { apiKey: b.api_key })).status).toBe(404)
    expect((await node.fetch(`${base}/operations`, { apiKey: b.api_key })).status).toBe(404)
    expect((await node.fetch(`${base}/connections`, { apiKey: b.api_key })).status).toBe(404)
    expect((await node.fetch(`${base}/connections/${conn.id}`, { apiKey: b.api_key })).status).toBe(404)
    expect((await node.fetch(`${base}/connections/${conn.id}/listPets/schema`, { apiKey: b.api_key })).status).toBe(404)
    expect((await invoke(node, b.api_key, connector.id, conn.id, "listPets")).status).toBe(404)
    expect((await invoke(node, b.api_key, "_", conn.id, "listPets")).status).toBe(404)
    expect(
      (await node.fetch(`${base}/connections/${conn.id}`, {
        ...json({ name: "hijack" }),
        method: "PATCH",
        apiKey: b.api_key
      })).status
    ).toBe(404)
    expect((await node.fetch(`${base}/connections/${conn.id}`, { method: "DELETE", apiKey: b.api_key })).status).toBe(
      404
    )
    expect(
      (await node.fetch(base, { ...json({ spec: petstore("http://x") }), method: "PUT", apiKey: b.api_key })).status
    ).toBe(404)
    expect((await node.fetch(base, { method: "DELETE", apiKey: b.api_key })).status).toBe(404)
    // and it still works for its owner
    expect((await invoke(node, a.api_key, connector.id, conn.id, "listPets")).status).toBe(200)
  })

  it("renames, re-keys and deletes a connection; a connection of another connector is refused", async () => {
    const { api_key: apiKey } = await node.bootstrap()
    const connector = await createConnector(node, apiKey, petstore(target.url))
    const otherConnector = await createConnector(node, apiKey, petstore(target.url), { name: "Other" })
    const conn = await createConnection(node, apiKey, connector.id, {
      name: "old",
      credentials: { type: "api_key", value: "v1" }
    })
    const base = `/v1/tools/connectors/${connector.id}/connections/${conn.id}`
    const renamed = await node.fetch(base, {
      ...json({ name: "new", credentials: { type: "api_key", value: "v2" } }),
      method: "PATCH",
      apiKey
    })
    expect((await renamed.json()).name).toBe("new")
    await invoke(node, apiKey, connector.id, conn.id, "listPets")
    expect(lastRequest().headers["x-api-key"]).toBe("v2")
    expect((await invoke(node, apiKey, otherConnector.id, conn.id, "listPets")).status).toBe(404)
    expect((await node.fetch(base, { method: "DELETE", apiKey })).status).toBe(204)
    expect((await invoke(node, apiKey, connector.id, conn.id, "listPets")).status).toBe(404)
    expect((await node.fetch(base, { apiKey })).status).toBe(404)
  })

  it("a PATCH that changes nothing writes nothing and audits nothing", async () => {
    const { api_key: apiKey, organization_id: organizationId } = await node.bootstrap()
    const connector = await createConnector(node, apiKey, petstore(target.url))
    const conn = await createConnection(node, apiKey, connector.id, {
      name: "same",
      server_url: `${target.url}/v2`,
      credentials: { type: "api_key", value: "v1" }
    })
    const base = `/v1/tools/connectors/${connector.id}/connections/${conn.id}`
    for (const body of [{}, { name: "same", server_url: `${target.url}/v2` }]) {
      const r = await node.fetch(base, { ...json(body), method: "PATCH", apiKey })
      expect(r.status).toBe(200)
      expect((await r.json()).updated_at).toBe(conn.updated_at)
    }
    const actions = (await auditEvents(node, organizationId)).map((e) => e.action)
    expect(actions).not.toContain("UPDATE_CONNECTION")
    // a real change still is one
    const renamed = await node.fetch(base, { ...json({ name: "other" }), method: "PATCH", apiKey })
    expect((await renamed.json()).name).toBe("other")
    const updates = (await auditEvents(node, organizationId)).filter((e) => e.action === "UPDATE_CONNECTION")
    expect(updates.map((e) => e.details)).toEqual([{ changed: ["name"] }])
  })

  it("re-keys an API key connection where its key went, unless a scheme is named", async () => {
    const { api_key: apiKey } = await node.bootstrap()
    const connector = await createConnector(
      node,
      apiKey,
      petstore(target.url, {
        h: { type: "apiKey", in: "header", name: "X-Api-Key" },
        query: { type: "apiKey", in: "query", name: "api_key" }
      })
    )
    const conn = await createConnection(node, apiKey, connector.id, {
      name: "q",
      credentials: { type: "api_key", value: "old-key", scheme: "query" }
    })
    const patch = (credentials: Record<string, unknown>) =>
      node.fetch(`/v1/tools/connectors/${connector.id}/connections/${conn.id}`, {
        ...json({ credentials }),
        method: "PATCH",
        apiKey
      })
    // the connection says which scheme its key goes by
    expect(conn.security_scheme).toBe("query")
    const rotated = await patch({ type: "api_key", value: "new-key" })
    expect(rotated.status).toBe(200)
    expect((await rotated.json()).security_scheme).toBe("query")
    expect((await invoke(node, apiKey, connector.id, conn.id, "listPets")).status).toBe(200)
    expect(lastRequest().query.get("api_key")).toBe("new-key")
    expect(lastRequest().headers["x-api-key"]).toBeUndefined()
    expect((await patch({ type: "api_key", value: "hdr-key", scheme: "h" })).status).toBe(200)
    expect((await invoke(node, apiKey, connector.id, conn.id, "listPets")).status).toBe(200)
    expect(lastRequest().headers["x-api-key"]).toBe("hdr-key")
    expect(lastRequest().query.get("api_key")).toBeNull()
  })

  it("deletes a connector's connections, credentials and all, when it is archived", async () => {
    const { api_key: apiKey } = await node.bootstrap()
    const connector = await createConnector(node, apiKey, petstore(target.url))
    const kept = await createConnector(node, apiKey, petstore(target.url), { name: "Kept" })
    const conn = await createConnection(node, apiKey, connector.id, {
      name: "a",
      credentials: { type: "api_key", value: "archived-secret" }
    })
    const other = await createConnection(node, apiKey, kept.id, {
      name: "b",
      credentials: { type: "api_key", value: "kept-secret" }
    })
    expect((await node.fetch(`/v1/tools/connectors/${connector.id}`, { method: "DELETE", apiKey })).status).toBe(200)
    expect((await invoke(node, apiKey, "_", conn.id, "listPets")).status).toBe(404)
    const db = new pg.Client({ connectionString: node.databaseUrl })
    await db.connect()
    try {
      const { rows } = await db.query(
        "SELECT id, deleted_at IS NOT NULL AS deleted, credentials IS NULL AS wiped FROM connections WHERE id = ANY($1)",
        [[conn.id, other.id]]
      )
      const byId = Object.fromEntries(rows.map((r) => [r.id, { deleted: r.deleted, wiped: r.wiped }]))
      expect(byId[conn.id]).toEqual({ deleted: true, wiped: true })
      expect(byId[other.id]).toEqual({ deleted: false, wiped: false })
    } finally {
      await db.end()
    }
    expect((await invoke(node, apiKey, kept.id, other.id, "listPets")).status).toBe(200)
  })

  it("serves the operation input schema with both id forms", async () => {
    const { api_key: apiKey } = await node.bootstrap()
    const connector = await createConnector(node, apiKey, petstore(target.url))
    const conn = await createConnection(node, apiKey, connector.id, {
      name: "s",
      credentials: { type: "api_key", value: "v" }
    })
    const schema =
      await (await node.fetch(`/v1/tools/connectors/${connector.id}/connections/${conn.id}/createPet/schema`, {
        apiKey
      })).json()
    expect(schema.input.type).toBe("object")
    expect(schema.input.properties.body_params.required).toEqual(["name"])
    expect(schema.input.required).toContain("body_params")
    const ops = await (await node.fetch(`/v1/tools/connectors/${connector.id}/operations`, { apiKey })).json()
    const getPet = ops.find((o: any) => o.operationId === "getPet")
    const byId =
      await (await node.fetch(`/v1/tools/connectors/_/connections/${conn.id}/${getPet.id}/schema`, { apiKey })).json()
    expect(byId.input.properties.path_params.required).toEqual(["petId"])
  })
})

describe("invocation records", () => {
  it("records each call (who, what, outcome, timing, sizes) without its payloads", async () => {
    const org = await node.bootstrap()
    const connector = await createConnector(node, org.api_key, petstore(target.url))
    const conn = await createConnection(node, org.api_key, connector.id, {
      name: "r",
      credentials: { type: "api_key", value: "v" }
    })
    expect(
      (await invoke(node, org.api_key, connector.id, conn.id, "createPet", {
        body_params: { name: "secret-pet-name" }
      })).status
    ).toBe(200)
    expect((await invoke(node, org.api_key, connector.id, conn.id, "getPet", { path_params: { petId: "1" } })).status)
      .toBe(200)
    const db = new pg.Client({ connectionString: node.databaseUrl })
    await db.connect()
    try {
      let rows: Array<any> = []
      const deadline = Date.now() + 5_000
      while (rows.length < 2 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100))
        rows =
          (await db.query("SELECT * FROM connector_invocations WHERE connection_id = $1 ORDER BY id", [conn.id])).rows
      }
      expect(rows).toHaveLength(2)
      expect(rows[0]).toMatchObject({
        organization_id: org.organization_id,
        connector_id: connector.id,
        status: 200,
        user_id: org.user_id
      })
      expect(rows[0].api_key_id).toBe(org.api_key.slice(3, 15))
      expect(Number(rows[0].request_bytes)).toBeGreaterThan(0)
      expect(rows[0].duration_ms).toBeGreaterThan(0)
      expect(JSON.stringify(rows)).not.toContain("secret-pet-name")
    } finally {
      await db.end()
    }
  })
})
