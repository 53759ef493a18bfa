import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { withDatabase } from "../access/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createConnection, createConnector, invoke, petstore } from "./support.js"

// every case runs against both ways a node answers an invoke: the in-memory fast path (once the key,
// connection and credentials are cached) and the general stack
describe.each([["fast path", "true"], ["general stack", "false"]])("invoke through the %s", (_, fastPath) => {
  let node: TestNode
  let target: TargetServer
  let apiKey: string
  let connector: any
  let connection: any

  beforeAll(async () => {
    node = await startTestNode({
      SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
      SWITCHYARD_CONNECTOR_TIMEOUT: "1500 millis",
      SWITCHYARD_CONNECTOR_FAST_PATH: fastPath
    })
    target = await startTargetServer()
    apiKey = (await node.bootstrap()).api_key
    connector = await createConnector(node, apiKey, petstore(target.url))
    connection = await createConnection(node, apiKey, connector.id, {
      name: "main",
      credentials: { type: "api_key", value: "secret-123" }
    })
  })
  afterAll(async () => {
    await node?.stop()
    await target?.close()
  })

  describe("invoking a connector operation", () => {
    it("sends the spec's method, path, query and body with the stored key, and passes the answer through", async () => {
      const before = target.requests.length
      const response = await invoke(node, apiKey, connector.id, connection.id, "createPet", {
        body_params: { name: "Rex", tag: null },
        headers: { "X-Trace": "t-1" }
      })
      expect(response.status).toBe(200)
      expect(response.headers.get("x-upstream")).toBe("yes")
      expect(response.headers.get("x-switchyard-error")).toBeNull()
      const seen = target.requests[before]!
      expect(seen.method).toBe("POST")
      expect(seen.path).toBe("/pets")
      expect(seen.headers["x-api-key"]).toBe("secret-123")
      expect(seen.headers["x-trace"]).toBe("t-1")
      expect(seen.headers["content-type"]).toBe("application/json")
      expect(JSON.parse(seen.body.toString())).toEqual({ name: "Rex", tag: null })
      // the caller's own key never reaches the target
      expect(JSON.stringify(seen.headers)).not.toContain(apiKey)
    })

    it("serializes query parameters per their style", async () => {
      const before = target.requests.length
      const response = await invoke(node, apiKey, connector.id, connection.id, "listPets", {
        query_params: { tags: ["a", "b"], limit: 5 }
      })
      expect(response.status).toBe(200)
      expect(target.requests[before]!.query.getAll("tags")).toEqual(["a", "b"])
      expect(target.requests[before]!.query.get("limit")).toBe("5")
    })

    it("sends every parameter style it imports without a warning in that style", async () => {
      const styled = await createConnector(node, apiKey, {
        swagger: "2.0",
        info: { title: "Styles", version: "1" },
        host: new URL(target.url).host,
        schemes: ["http"],
        paths: {
          "/boards/{ids}/{pair}": {
            get: {
              operationId: "styles",
              parameters: [
                { name: "ids", in: "path", required: true, type: "array", items: { type: "string" } },
                { name: "pair", in: "path", required: true, type: "string" },
                { name: "cols", in: "query", type: "array", items: { type: "string" }, collectionFormat: "tsv" },
                { name: "tags", in: "query", type: "array", items: { type: "integer" }, collectionFormat: "pipes" }
              ]
            }
          }
        }
      })
      expect(styled.import_report.warnings).toEqual([])
      const conn = await createConnection(node, apiKey, styled.id, { name: "s" })
      const before = target.requests.length
      const response = await invoke(node, apiKey, styled.id, conn.id, "styles", {
        path_params: { ids: ["a b", "c/d"], pair: "x" },
        query_params: { cols: ["p", "q"], tags: [1, 2] }
      })
      expect(response.status).toBe(200)
      const seen = target.requests[before]!
      // simple style: the items, each encoded, joined by commas
      expect(seen.path).toBe("/boards/a%20b,c%2Fd/x")
      expect(seen.query.get("cols")).toBe("p\tq")
      expect(seen.query.get("tags")).toBe("1|2")
      // an array cannot smuggle a dot segment in
      const dotted = await invoke(node, apiKey, styled.id, conn.id, "styles", {
        path_params: { ids: [".."], pair: "x" }
      })
      expect(dotted.status).toBe(400)
      expect((await dotted.json()).error.details.issues[0].path).toBe("path_params.ids")
    })

    it("matches header names case-insensitively and takes a typed header's text", async () => {
      const headed = await createConnector(node, apiKey, {
        openapi: "3.1.0",
        info: { title: "Headers", version: "1" },
        servers: [{ url: target.url }],
        paths: {
          "/h": {
            get: {
              operationId: "headed",
              parameters: [
                { name: "X-Tenant", in: "header", required: true, schema: { type: "string" } },
                { name: "X-Page-Size", in: "header", required: true, schema: { type: "integer", maximum: 50 } },
                { name: "X-Dry-Run", in: "header", schema: { type: "boolean" } }
              ]
            }
          }
        }
      })
      const conn = await createConnection(node, apiKey, headed.id, { name: "h" })
      const before = target.requests.length
      const response = await invoke(node, apiKey, headed.id, conn.id, "headed", {
        headers: { "x-tenant": "acme", "x-page-size": "20", "X-DRY-RUN": "true" }
      })
      expect(response.status).toBe(200)
      const seen = target.requests[before]!
      expect(seen.headers["x-tenant"]).toBe("acme")
      expect(seen.headers["x-page-size"]).toBe("20")
      expect(seen.headers["x-dry-run"]).toBe("true")
      const wrong = await invoke(node, apiKey, headed.id, conn.id, "headed", {
        headers: { "x-tenant": "acme", "X-Page-Size": "many", "x-dry-run": "maybe" }
      })
      expect(wrong.status).toBe(400)
      expect((await wrong.json()).error.details.issues).toEqual([
        { path: "headers.X-Dry-Run", message: "must be boolean" },
        { path: "headers.X-Page-Size", message: "must be integer" }
      ])
      const tooBig = await invoke(node, apiKey, headed.id, conn.id, "headed", {
        headers: { "X-Tenant": "acme", "X-Page-Size": "51" }
      })
      expect((await tooBig.json()).error.details.issues).toEqual([
        { path: "headers.X-Page-Size", message: "must be <= 50" }
      ])
    })

    it("writes an object query parameter in form style: exploded as its own pairs, else as k,v,k,v", async () => {
      const objects = await createConnector(node, apiKey, {
        openapi: "3.1.0",
        info: { title: "Objects", version: "1" },
        servers: [{ url: target.url }],
        paths: {
          "/people": {
            get: {
              operationId: "people",
              parameters: [
                { name: "filter", in: "query", style: "form", explode: false, schema: { type: "object" } },
                { name: "page", in: "query", style: "form", explode: true, schema: { type: "object" } }
              ]
            }
          }
        }
      })
      const conn = await createConnection(node, apiKey, objects.id, { name: "o" })
      const before = target.requests.length
      const response = await invoke(node, apiKey, objects.id, conn.id, "people", {
        query_params: { filter: { role: "admin", age: 3 }, page: { size: 10 } }
      })
      expect(response.status).toBe(200)
      expect(Object.fromEntries(target.requests[before]!.query)).toEqual({ filter: "role,admin,age,3", size: "10" })
    })

    it("takes the text of a query or path parameter declared as a number or boolean (as a model sends it)", async () => {
      const typed = await createConnector(node, apiKey, {
        openapi: "3.1.0",
        info: { title: "Typed", version: "1" },
        servers: [{ url: target.url }],
        paths: {
          "/pages/{page}": {
            get: {
              operationId: "paged",
              parameters: [
                { name: "page", in: "path", required: true, schema: { type: "integer", minimum: 1 } },
                { name: "limit", in: "query", schema: { type: "integer", maximum: 100 } },
                { name: "draft", in: "query", schema: { type: "boolean" } },
                { name: "q", in: "query", schema: { type: "string" } }
              ]
            }
          }
        }
      })
      const conn = await createConnection(node, apiKey, typed.id, { name: "t" })
      const before = target.requests.length
      const response = await invoke(node, apiKey, typed.id, conn.id, "paged", {
        path_params: { page: "3" },
        query_params: { limit: "2", draft: "false", q: "7" }
      })
      expect(response.status, await response.clone().text()).toBe(200)
      const seen = target.requests[before]!
      expect(seen.path).toBe("/pages/3")
      expect(Object.fromEntries(seen.query)).toEqual({ limit: "2", draft: "false", q: "7" })
      // the text is checked as its type: not a number, or out of range, is still refused
      const wrong = await invoke(node, apiKey, typed.id, conn.id, "paged", {
        path_params: { page: "0" },
        query_params: { limit: "two", draft: "no" }
      })
      expect(wrong.status).toBe(400)
      expect((await wrong.json()).error.details.issues.map((i: any) => i.path).sort()).toEqual([
        "path_params.page",
        "query_params.draft",
        "query_params.limit"
      ])
    })

    it("uses GET for a GET operation even though invoke is a POST, and encodes path parameters", async () => {
      const before = target.requests.length
      const response = await invoke(node, apiKey, connector.id, connection.id, "getPet", {
        path_params: { petId: "a b/c" }
      })
      expect(response.status).toBe(200)
      expect(target.requests[before]!.method).toBe("GET")
      expect(target.requests[before]!.path).toBe("/pets/a%20b%2Fc")
    })

    it("accepts the operation's id as well as its operationId, and `_` for the connector", async () => {
      const ops =
        await (await node.fetch(`/v1/tools/connectors/${connector.id}/operations?connection_id=${connection.id}`, {
          apiKey
        })).json()
      const getPet = ops.find((o: any) => o.operationId === "getPet")
      expect(getPet).toMatchObject({ method: "get", path: "/pets/{petId}", pretty_name: "Get a pet" })
      const byId = await invoke(node, apiKey, connector.id, connection.id, getPet.id, { path_params: { petId: "1" } })
      expect(byId.status).toBe(200)
      const underscore = await invoke(node, apiKey, "_", connection.id, "getPet", { path_params: { petId: "2" } })
      expect(underscore.status).toBe(200)
    })

    it("passes upstream errors through unchanged, without our marker", async () => {
      target.reply = (_req, res) => {
        res.writeHead(418, { "content-type": "application/json", "x-teapot": "1" })
        res.end(JSON.stringify({ error: { code: "teapot", message: "I am one" } }))
      }
      try {
        const response = await invoke(node, apiKey, connector.id, connection.id, "listPets")
        expect(response.status).toBe(418)
        expect(response.headers.get("x-teapot")).toBe("1")
        expect(response.headers.get("x-switchyard-error")).toBeNull()
        expect(await response.json()).toEqual({ error: { code: "teapot", message: "I am one" } })
      } finally {
        target.reply = (await import("../support/TargetServer.js")).echo
      }
    })

    it("streams large and binary bodies intact", async () => {
      const bytes = Buffer.alloc(5 * 1024 * 1024)
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) & 0xff
      target.reply = (_req, res) => {
        res.writeHead(200, { "content-type": "application/octet-stream" })
        res.end(bytes)
      }
      try {
        const response = await invoke(node, apiKey, connector.id, connection.id, "getFile", {
          path_params: { name: "blob" }
        })
        expect(response.status).toBe(200)
        expect(response.headers.get("content-type")).toBe("application/octet-stream")
        expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true)
      } finally {
        target.reply = (await import("../support/TargetServer.js")).echo
      }
    })

    it("refuses top-level fields outside the four, naming them", async () => {
      const response = await invoke(node, apiKey, connector.id, connection.id, "createPet", {
        name: "Rex",
        body_params: { name: "x" }
      })
      expect(response.status).toBe(400)
      const body = await response.json()
      expect(body.error.code).toBe("validation_failed")
      expect(JSON.stringify(body.error.details)).toContain("name")
    })

    it("validates inputs against the operation schema before calling", async () => {
      const before = target.requests.length
      const missing = await invoke(node, apiKey, connector.id, connection.id, "createPet", {
        body_params: { tag: "x" }
      })
      expect(missing.status).toBe(400)
      const body = await missing.json()
      expect(body.error.code).toBe("validation_failed")
      expect(body.error.details.issues.map((i: any) => i.path)).toContain("body_params.name")
      const noPath = await invoke(node, apiKey, connector.id, connection.id, "getPet", {})
      expect(noPath.status).toBe(400)
      const tooBig = await invoke(node, apiKey, connector.id, connection.id, "listPets", {
        query_params: { limit: 1000 }
      })
      expect(tooBig.status).toBe(400)
      expect(target.requests.length).toBe(before)
    })

    it("accepts the README's invoke shape, empty groups included, on an operation without query or path parameters", async () => {
      const before = target.requests.length
      const response = await invoke(node, apiKey, connector.id, connection.id, "createPet", {
        body_params: { name: "Rex" },
        query_params: {},
        path_params: {},
        headers: { "X-Trace": "1" }
      })
      expect(response.status).toBe(200)
      expect(target.requests[before]!.path).toBe("/pets")
      expect(JSON.parse(target.requests[before]!.body.toString())).toEqual({ name: "Rex" })
    })

    it("accepts an empty body_params on an operation without a body, and sends no body", async () => {
      const before = target.requests.length
      const response = await invoke(node, apiKey, connector.id, connection.id, "getPet", {
        body_params: {},
        query_params: {},
        path_params: { petId: "7" }
      })
      expect(response.status).toBe(200)
      expect(target.requests[before]!.method).toBe("GET")
      expect(target.requests[before]!.body.length).toBe(0)
      const refused = await invoke(node, apiKey, connector.id, connection.id, "getPet", {
        body_params: { x: 1 },
        path_params: { petId: "7" }
      })
      expect(refused.status).toBe(400)
      expect((await refused.json()).error.details.issues).toEqual([
        { path: "body_params.x", message: "is not allowed" }
      ])
    })

    it("takes a request without a body as an empty one: every field of the body is optional", async () => {
      const before = target.requests.length
      const response = await fetch(
        `${node.baseUrl}/v1/tools/connectors/${connector.id}/connections/${connection.id}/listPets`,
        { method: "POST", headers: { "x-api-key": apiKey } }
      )
      expect(response.status).toBe(200)
      expect(target.requests[before]!.path).toBe("/pets")
    })

    it("shows all three groups in the operation's input schema, an empty one as an empty object", async () => {
      const response = await node.fetch(
        `/v1/tools/connectors/${connector.id}/connections/${connection.id}/createPet/schema`,
        { apiKey }
      )
      expect(response.status).toBe(200)
      const { input } = await response.json()
      const empty = { type: "object", properties: {}, additionalProperties: false }
      expect(input.properties.path_params).toEqual(empty)
      expect(input.properties.query_params).toEqual(empty)
      expect(input.properties.body_params).toBeDefined()
      expect(input.required).toEqual(["body_params"])
    })

    it("gives a connector imported before the three-group rule its groups when read", async () => {
      const old = await createConnector(node, apiKey, petstore(target.url), { name: "Imported earlier" })
      // as stored by an earlier release: groups only where the operation has such arguments
      await withDatabase(node, (db) =>
        db.query(
          `UPDATE connectors SET imported = jsonb_set(imported, '{operations}', (
             SELECT jsonb_agg(jsonb_set(op, '{input,properties}', (
               SELECT jsonb_object_agg(g.key, g.value) FROM jsonb_each(op #> '{input,properties}') g
               WHERE g.value <> '{"type": "object", "properties": {}, "additionalProperties": false}'::jsonb)))
             FROM jsonb_array_elements(imported->'operations') op)) WHERE id = $1
           RETURNING jsonb_path_query_array(imported, '$.operations[*].input.properties.path_params') AS paths,
             jsonb_path_query_array(imported, '$.operations[*].input.properties.body_params') AS bodies`,
          [old.id]
        ).then(({ rows }) => expect([rows[0].paths.length, rows[0].bodies.length]).toEqual([3, 1])))
      const conn = await createConnection(node, apiKey, old.id, {
        name: "x",
        credentials: { type: "api_key", value: "k" }
      })
      const schema = await (await node.fetch(
        `/v1/tools/connectors/${old.id}/connections/${conn.id}/listPets/schema`,
        { apiKey }
      )).json()
      expect(Object.keys(schema.input.properties).sort()).toEqual(
        ["body_params", "headers", "path_params", "query_params"]
      )
      const response = await invoke(node, apiKey, old.id, conn.id, "createPet", {
        body_params: { name: "Rex" },
        query_params: {},
        path_params: {}
      })
      expect(response.status).toBe(200)
    })

    it("does not let the caller override the credentials' header", async () => {
      const response = await invoke(node, apiKey, connector.id, connection.id, "listPets", {
        headers: { "X-Api-Key": "mine" }
      })
      expect(response.status).toBe(400)
      expect((await response.json()).error.code).toBe("header_not_allowed")
    })

    it("answers unknown operations, connections and connectors with 404", async () => {
      expect((await invoke(node, apiKey, connector.id, connection.id, "nope")).status).toBe(404)
      expect((await invoke(node, apiKey, connector.id, crypto.randomUUID(), "listPets")).status).toBe(404)
      expect((await invoke(node, apiKey, crypto.randomUUID(), connection.id, "listPets")).status).toBe(404)
    })

    it("times out with 504 and aborts the upstream request", async () => {
      let aborted = false
      target.reply = (_req, res) => {
        res.on("close", () => (aborted = true))
      }
      try {
        const response = await invoke(node, apiKey, connector.id, connection.id, "slow")
        expect(response.status).toBe(504)
        expect((await response.json()).error.code).toBe("upstream_timeout")
        await new Promise((r) => setTimeout(r, 200))
        expect(aborted).toBe(true)
      } finally {
        target.reply = (await import("../support/TargetServer.js")).echo
      }
    })

    it("answers 502 when the target is unreachable", async () => {
      const gone = await startTargetServer()
      await gone.close()
      const other = await createConnector(node, apiKey, petstore(gone.url), { name: "Gone" })
      const conn = await createConnection(node, apiKey, other.id, {
        name: "x",
        credentials: { type: "api_key", value: "k" }
      })
      const response = await invoke(node, apiKey, other.id, conn.id, "listPets")
      expect(response.status).toBe(502)
      expect(response.headers.get("x-switchyard-error")).toBe("true")
      expect((await response.json()).error.code).toBe("upstream_unreachable")
    })
  })

  describe("egress guard", () => {
    it("refuses internal targets by default", async () => {
      const guarded = await startTestNode()
      try {
        const key = (await guarded.bootstrap()).api_key
        const c = await createConnector(guarded, key, petstore(target.url))
        const conn = await createConnection(guarded, key, c.id, {
          name: "x",
          credentials: { type: "api_key", value: "k" }
        })
        const before = target.requests.length
        const response = await invoke(guarded, key, c.id, conn.id, "listPets")
        expect(response.status).toBe(403)
        const body = await response.json()
        expect(body.error.code).toBe("egress_refused")
        expect(body.error.message).toContain("SWITCHYARD_EGRESS_ALLOW")
        expect(target.requests.length).toBe(before)
      } finally {
        await guarded.stop()
      }
    })
  })
})
