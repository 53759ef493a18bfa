import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { atOnce, auditEvents, call } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createConnection, createConnector, json, petstore } from "./support.js"

let node: TestNode
let apiKey: string
beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
  apiKey = (await node.bootstrap()).api_key
})
afterAll(() => node?.stop())

const tools = (query: string, key = apiKey) => node.fetch(`/v1/tools${query}`, { apiKey: key })

describe("tool catalog", () => {
  it("requires type=connector, with a clear 400", async () => {
    for (const query of ["", "?query=pet", "?type=agent"]) {
      const response = await tools(query)
      expect(response.status).toBe(400)
      const body = await response.json()
      expect(body.error.code).toBe("type_required")
      expect(body.error.message).toContain("type=connector")
    }
  })

  it("lists built-in connectors to every organization, shaped as spec 2.2", async () => {
    const body = await (await tools("?type=connector")).json()
    expect(Object.keys(body)).toEqual(expect.arrayContaining(["items", "total"]))
    const names = body.items.map((c: any) => c.name)
    expect(names).toEqual(expect.arrayContaining(["HTTP JSON API", "Switchyard"]))
    const builtIn = body.items.find((c: any) => c.name === "Switchyard")
    expect(builtIn).toMatchObject({ kind: "connector", status: "ready", built_in: true, connections: [] })
    expect(builtIn.total_operations).toBeGreaterThan(3)
    expect(typeof builtIn.using_built_in_auth).toBe("boolean")
  })

  it("searches by name case-insensitively and pages with a cursor", async () => {
    const other = (await node.bootstrap()).api_key
    for (const name of ["Alpha Pets", "beta PETS", "Gamma pets", "Unrelated"]) {
      await createConnector(node, other, petstore("http://127.0.0.1:1"), { name })
    }
    const all = await (await tools("?type=connector&query=PETS", other)).json()
    expect(all.items.map((c: any) => c.name)).toEqual(["Alpha Pets", "beta PETS", "Gamma pets"])
    expect(all.total).toBe(3)
    const first = await (await tools("?type=connector&query=pets&limit=2", other)).json()
    expect(first.items.map((c: any) => c.name)).toEqual(["Alpha Pets", "beta PETS"])
    expect(first.total).toBe(3)
    const second = await (await tools(`?type=connector&query=pets&limit=2&cursor=${first.next_cursor}`, other)).json()
    expect(second.items.map((c: any) => c.name)).toEqual(["Gamma pets"])
    expect(second.next_cursor).toBeNull()
    expect((await tools("?type=connector&cursor=garbage", other)).status).toBe(400)
    expect((await tools("?type=connector&limit=0", other)).status).toBe(400)
    // another organization's connectors are not in this one's catalog
    const mine = await (await tools("?type=connector&query=pets")).json()
    expect(mine.total).toBe(0)
  })
})

describe("custom connectors", () => {
  it("imports a document, reports what it did, and lists its operations", async () => {
    const created = await createConnector(node, apiKey, petstore("http://127.0.0.1:9"), { description: "ours" })
    expect(created).toMatchObject({
      kind: "connector",
      name: "Pet Store",
      description: "ours",
      total_operations: 6,
      built_in: false
    })
    expect(created.import_report.imported).toBe(6)
    expect(created.auth_types).toEqual(["api_key"])
    const ops = await (await node.fetch(`/v1/tools/connectors/${created.id}/operations`, { apiKey })).json()
    expect(ops).toHaveLength(6)
    for (const op of ops) {
      expect(Object.keys(op).sort()).toEqual([
        "id",
        "method",
        "operationId",
        "path",
        "pretty_description",
        "pretty_name"
      ])
      expect(op.method).toBe(op.method.toLowerCase())
    }
    const filtered = await (await node.fetch(`/v1/tools/connectors/${created.id}/operations?query=pet`, { apiKey }))
      .json()
    expect(filtered.length).toBeLessThan(6)
    // the catalog lists it as GET /v1/tools/connectors/{id} describes it, without reading its operations
    const described = await (await node.fetch(`/v1/tools/connectors/${created.id}`, { apiKey })).json()
    const listed = (await (await tools("?type=connector&query=pet%20store")).json()).items
    expect(listed.find((c: any) => c.id === created.id)).toEqual(described)
    expect(described).toMatchObject({ total_operations: 6, auth_types: ["api_key"], server_url: "http://127.0.0.1:9" })
  })

  it("a document of 3,000 operations: every one listed in the one array, `query` finds one among them", async () => {
    // a large API (cloud providers' run to thousands): 1,500 paths, each with a GET and a POST on one shared schema
    const paths: Record<string, unknown> = {}
    for (let i = 0; i < 1500; i++) {
      paths[`/zones/{zone}/records${i}`] = {
        parameters: [{ name: "zone", in: "path", required: true, schema: { type: "string" } }],
        get: {
          operationId: `listRecords${i}`,
          summary: `List records of kind ${i}`,
          responses: { 200: { description: "ok" } }
        },
        post: {
          operationId: `createRecord${i}`,
          summary: `Create a record of kind ${i}`,
          description: "Adds one record to the zone.",
          requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/Record" } } } },
          responses: { 201: { description: "made" } }
        }
      }
    }
    const spec = {
      openapi: "3.0.3",
      info: { title: "Huge DNS", version: "1" },
      servers: [{ url: "http://127.0.0.1:9" }],
      components: {
        schemas: {
          Record: {
            type: "object",
            required: ["name"],
            properties: { name: { type: "string" }, ttl: { type: "integer" } }
          }
        }
      },
      paths
    }
    const created = await createConnector(node, apiKey, spec)
    expect(created).toMatchObject({ total_operations: 3000, import_report: { imported: 3000 } })
    const connection = await createConnection(node, apiKey, created.id, { name: "dns" })
    const response = await node.fetch(`/v1/tools/connectors/${created.id}/operations?connection_id=${connection.id}`, {
      apiKey
    })
    expect(response.status).toBe(200)
    const ops = await response.json()
    expect(ops).toHaveLength(3000)
    expect(new Set(ops.map((op: any) => op.operationId)).size).toBe(3000)
    expect(ops.find((op: any) => op.operationId === "createRecord1499")).toMatchObject({
      method: "post",
      path: "/zones/{zone}/records1499",
      pretty_description: "Adds one record to the zone."
    })
    // case-insensitive, on the name, the summary, the description or the path
    const found = await (await node.fetch(
      `/v1/tools/connectors/${created.id}/operations?query=CREATE%20A%20RECORD%20of%20kind%201234`,
      { apiKey }
    )).json()
    expect(found.map((op: any) => op.operationId)).toEqual(["createRecord1234"])
    const byPath =
      await (await node.fetch(`/v1/tools/connectors/${created.id}/operations?query=%2Frecords777`, { apiKey })).json()
    expect(byPath.map((op: any) => op.operationId)).toEqual(["listRecords777", "createRecord777"])
    // the last operation's input schema is there as the first's
    const schema = await (await node.fetch(
      `/v1/tools/connectors/${created.id}/connections/${connection.id}/createRecord1499/schema`,
      { apiKey }
    )).json()
    expect(schema.input.properties.body_params.required).toEqual(["name"])
    expect(schema.input.properties.path_params.required).toEqual(["zone"])
  })

  it("imports YAML text too", async () => {
    const yaml =
      "openapi: 3.1.0\ninfo: {title: Tiny, version: '1'}\nservers: [{url: 'http://127.0.0.1:9'}]\npaths:\n  /ping:\n    get:\n      operationId: ping\n      responses: {'200': {description: ok}}\n"
    const created = await createConnector(node, apiKey, yaml)
    expect(created.name).toBe("Tiny")
    expect(created.using_built_in_auth).toBe(true)
  })

  it("says exactly what is wrong with a bad document, never a 500", async () => {
    const cases: Array<[unknown, string]> = [
      [{ info: { title: "x" } }, "openapi"],
      [{ openapi: "1.2", info: { title: "x" }, paths: {} }, "1.2"],
      [{ openapi: "3.0.0", info: { title: "x" }, paths: "nope" }, "paths"],
      ["openapi: 3.0.0\ninfo: [unclosed", "line"],
      [42, "spec"]
    ]
    for (const [spec, mention] of cases) {
      const response = await node.fetch("/v1/tools/connectors", { ...json({ spec }), apiKey })
      expect(response.status).toBe(400)
      const body = await response.json()
      expect(JSON.stringify(body.error).toLowerCase()).toContain(mention.toLowerCase())
    }
  })

  it("replaces the document with PUT (connections stay) and archives with DELETE", async () => {
    const created = await createConnector(node, apiKey, petstore("http://127.0.0.1:9"))
    const conn = await createConnection(node, apiKey, created.id, {
      name: "keep me",
      credentials: { type: "api_key", value: "k" }
    })
    const smaller = petstore("http://127.0.0.1:9") as any
    delete smaller.paths["/slow"]
    const replaced = await node.fetch(`/v1/tools/connectors/${created.id}`, {
      ...json({ spec: smaller }),
      method: "PUT",
      apiKey
    })
    expect(replaced.status).toBe(200)
    const body = await replaced.json()
    expect(body.total_operations).toBe(5)
    expect(body.connections.map((c: any) => c.id)).toEqual([conn.id])
    const archived = await node.fetch(`/v1/tools/connectors/${created.id}`, { method: "DELETE", apiKey })
    expect(archived.status).toBe(200)
    expect((await node.fetch(`/v1/tools/connectors/${created.id}`, { apiKey })).status).toBe(404)
    const list = await (await tools("?type=connector&query=Pet Store")).json()
    expect(list.items.map((c: any) => c.id)).not.toContain(created.id)
  })

  it("PUT keeps the server_url override when left out and removes it with null", async () => {
    const created = await (await node.fetch("/v1/tools/connectors", {
      ...json({ spec: petstore("http://127.0.0.1:9"), server_url: "http://127.0.0.1:7" }),
      apiKey
    })).json()
    expect(created.server_url).toBe("http://127.0.0.1:7")
    const put = (body: unknown) =>
      node.fetch(`/v1/tools/connectors/${created.id}`, { ...json(body), method: "PUT", apiKey }).then((r) => r.json())
    expect((await put({ spec: petstore("http://127.0.0.1:9") })).server_url).toBe("http://127.0.0.1:7")
    expect((await put({ spec: petstore("http://127.0.0.1:9"), server_url: null })).server_url).toBe(
      "http://127.0.0.1:9"
    )
  })

  it("lets only Admins and above add connectors", async () => {
    const member = await node.fetch("/v1/members", { ...json({ email: `m-${Date.now()}@example.com` }), apiKey })
    const { user } = await member.json()
    const key = await (await node.fetch("/v1/api-keys", { ...json({ name: "m", user_id: user.id }), apiKey })).json()
    const response = await node.fetch("/v1/tools/connectors", {
      ...json({ spec: petstore("http://x") }),
      apiKey: key.api_key
    })
    expect(response.status).toBe(403)
  })
})

describe("PUT of a connector", () => {
  it("of the document, name and server URL it holds changes nothing: not written, not audited", async () => {
    const org = await node.bootstrap()
    const created = await createConnector(node, org.api_key, petstore("http://127.0.0.1:9"), { name: "Pets" })
    const body = { spec: petstore("http://127.0.0.1:9"), name: "Pets" }
    const first = await call(node, org.api_key, "PUT", `/v1/tools/connectors/${created.id}`, body)
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    const before = await auditEvents(node, org.organization_id)
    // a CI job re-uploading the same document on every deploy
    const again = await call(node, org.api_key, "PUT", `/v1/tools/connectors/${created.id}`, body)
    expect(again.status).toBe(200)
    expect(again.body.updated_at).toBe(first.body.updated_at)
    expect(await auditEvents(node, org.organization_id)).toEqual(before)
  })

  it("PUTs at once apply one after the other: a rename stands when the other leaves the name out", async () => {
    const org = await node.bootstrap()
    const created = await createConnector(node, org.api_key, petstore("http://127.0.0.1:9"), { name: "Pets" })
    const path = `/v1/tools/connectors/${created.id}`
    const [renamed, moved] = await atOnce(node, "connectors", created.id, [
      () => call(node, org.api_key, "PUT", path, { spec: petstore("http://127.0.0.1:9"), name: "Renamed" }),
      () => call(node, org.api_key, "PUT", path, { spec: petstore("http://127.0.0.1:8") })
    ])
    expect([renamed.status, moved.status]).toEqual([200, 200])
    expect((await call(node, org.api_key, "GET", path)).body.name).toBe("Renamed")
    const records = (await auditEvents(node, org.organization_id)).filter((e: any) => e.action === "UPDATE_CONNECTOR")
    expect(records.map((e: any) => e.targets[0].name)).toEqual(["Renamed", "Renamed"])
  })
})
