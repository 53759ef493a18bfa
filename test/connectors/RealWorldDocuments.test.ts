import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createConnection, createConnector, invoke } from "./support.js"

let node: TestNode
let target: TargetServer
let apiKey: string

beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
  target = await startTargetServer()
  apiKey = (await node.bootstrap()).api_key
})
afterAll(async () => {
  await node?.stop()
  await target?.close()
})

/** Connects `spec` and invokes `operation` with `input`; what the target received. */
const sent = async (spec: unknown, operation: string, input: unknown, credentials?: unknown) => {
  const connector = await createConnector(node, apiKey, spec)
  const connection = await createConnection(node, apiKey, connector.id, {
    name: "c",
    ...(credentials === undefined ? {} : { credentials })
  })
  const before = target.requests.length
  const response = await invoke(node, apiKey, connector.id, connection.id, operation, input)
  expect(response.status, await response.clone().text()).toBe(200)
  return { seen: target.requests[before]!, connector }
}

const document = (paths: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  openapi: "3.0.3",
  info: { title: "Bodies", version: "1" },
  servers: [{ url: target.url }],
  paths,
  ...extra
})

const form = (schema: Record<string, unknown>, encoding?: Record<string, unknown>) => ({
  requestBody: {
    content: { "application/x-www-form-urlencoded": { schema, ...(encoding === undefined ? {} : { encoding }) } }
  },
  responses: { "200": { description: "ok" } }
})

/** The parts of a multipart body, read by undici's own parser. */
const partsOf = (seen: TargetServer["requests"][number]) =>
  new Response(new Uint8Array(seen.body), { headers: { "content-type": String(seen.headers["content-type"]) } })
    .formData()

describe("request bodies in their declared encoding", () => {
  it("writes a urlencoded body as Stripe's document declares it: deepObject fields, repeated arrays, no nulls", async () => {
    const { seen } = await sent(
      document({
        "/v1/customers": {
          post: {
            operationId: "PostCustomers",
            ...form(
              {
                type: "object",
                properties: {
                  email: { type: "string" },
                  description: { type: "string", nullable: true },
                  expand: { type: "array", items: { type: "string" } },
                  metadata: { type: "object", additionalProperties: { type: "string" } },
                  address: { type: "object", properties: { city: { type: "string" } } },
                  items: { type: "array", items: { type: "object", properties: { price: { type: "string" } } } },
                  preferred_locales: { type: "array", items: { type: "string" } }
                }
              },
              {
                expand: { style: "deepObject", explode: true },
                metadata: { style: "deepObject", explode: true },
                address: { style: "deepObject", explode: true },
                items: { style: "deepObject", explode: true }
              }
            )
          }
        }
      }),
      "PostCustomers",
      {
        body_params: {
          email: "a+b@example.com",
          description: null,
          expand: ["default_source", "tax"],
          metadata: { order: "6735", "note x": "a&b" },
          address: { city: "Paris" },
          items: [{ price: "p_1" }, { price: "p_2" }],
          preferred_locales: ["en", "fr"]
        }
      }
    )
    expect(seen.headers["content-type"]).toBe("application/x-www-form-urlencoded")
    expect([...new URLSearchParams(seen.body.toString())]).toEqual([
      ["email", "a+b@example.com"],
      ["expand[0]", "default_source"],
      ["expand[1]", "tax"],
      ["metadata[order]", "6735"],
      ["metadata[note x]", "a&b"],
      ["address[city]", "Paris"],
      ["items[0][price]", "p_1"],
      ["items[1][price]", "p_2"],
      // no encoding: form, exploded
      ["preferred_locales", "en"],
      ["preferred_locales", "fr"]
    ])
  })

  it("writes a deepObject query parameter to any depth", async () => {
    const { seen } = await sent(
      document({
        "/v1/charges": {
          get: {
            operationId: "GetCharges",
            parameters: [{
              name: "created",
              in: "query",
              style: "deepObject",
              explode: true,
              schema: { type: "object" }
            }],
            responses: { "200": { description: "ok" } }
          }
        }
      }),
      "GetCharges",
      { query_params: { created: { gte: 1, range: { to: 5 }, ids: ["a", "b"] } } }
    )
    expect([...seen.query]).toEqual([
      ["created[gte]", "1"],
      ["created[range][to]", "5"],
      ["created[ids][0]", "a"],
      ["created[ids][1]", "b"]
    ])
  })

  it("writes Swagger 2.0 formData arrays by their collectionFormat", async () => {
    const { connector, seen } = await sent(
      {
        swagger: "2.0",
        info: { title: "Form", version: "1" },
        host: new URL(target.url).host,
        schemes: ["http"],
        paths: {
          "/messages": {
            post: {
              operationId: "send",
              consumes: ["application/x-www-form-urlencoded"],
              parameters: [
                { name: "To", in: "formData", type: "string", required: true },
                {
                  name: "MediaUrl",
                  in: "formData",
                  type: "array",
                  items: { type: "string" },
                  collectionFormat: "multi"
                },
                { name: "Tags", in: "formData", type: "array", items: { type: "string" } }
              ]
            }
          }
        }
      },
      "send",
      { body_params: { To: "+33 6", MediaUrl: ["https://a/1", "https://a/2"], Tags: ["x", "y"] } }
    )
    expect(connector.import_report.warnings).toEqual([])
    expect([...new URLSearchParams(seen.body.toString())]).toEqual([
      ["To", "+33 6"],
      ["MediaUrl", "https://a/1"],
      ["MediaUrl", "https://a/2"],
      // csv, Swagger's default
      ["Tags", "x,y"]
    ])
  })

  it("sends a multipart body's bytes as a file part, arrays as repeated parts and objects as JSON parts", async () => {
    const { seen } = await sent(
      document({
        "/files": {
          post: {
            operationId: "upload",
            requestBody: {
              content: {
                "multipart/form-data": {
                  schema: {
                    type: "object",
                    properties: {
                      purpose: { type: "string" },
                      file: { type: "string", format: "binary" },
                      channels: { type: "array", items: { type: "string" } },
                      meta: { type: "object" },
                      note: { type: "string", nullable: true }
                    }
                  },
                  encoding: { file: { contentType: "text/csv" } }
                }
              }
            },
            responses: { "200": { description: "ok" } }
          }
        }
      }),
      "upload",
      { body_params: { purpose: "batch", file: "a,b\n1,2\n", channels: ["C1", "C2"], meta: { k: 1 }, note: null } }
    )
    const parts = await partsOf(seen)
    expect(parts.get("purpose")).toBe("batch")
    const file = parts.get("file") as File
    expect(file.name).toBe("file")
    expect(file.type).toBe("text/csv")
    expect(await file.text()).toBe("a,b\n1,2\n")
    expect(parts.getAll("channels")).toEqual(["C1", "C2"])
    // a part without a filename is text to the parser: its type is in the raw part
    expect(JSON.parse(parts.get("meta") as string)).toEqual({ k: 1 })
    expect(seen.body.toString()).toContain(
      "Content-Disposition: form-data; name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{\"k\":1}\r\n"
    )
    expect(parts.has("note")).toBe(false)
    expect(Number(seen.headers["content-length"])).toBe(seen.body.length)
  })

  it("sends a text/plain body as it is given", async () => {
    const { seen } = await sent(
      document({
        "/notes": {
          post: {
            operationId: "note",
            requestBody: { content: { "text/plain": { schema: { type: "string" } } } },
            responses: { "200": { description: "ok" } }
          }
        }
      }),
      "note",
      { body_params: "line 1\nline 2" }
    )
    expect(seen.headers["content-type"]).toBe("text/plain")
    expect(seen.body.toString()).toBe("line 1\nline 2")
  })
})

describe("parameters typed through a $ref", () => {
  it("takes the text of an integer behind allOf (ASP.NET's enums), checked as its declared type", async () => {
    const spec = document({
      "/orders/{id}": {
        get: {
          operationId: "Orders_Get",
          parameters: [
            { name: "id", in: "path", required: true, schema: { allOf: [{ $ref: "#/components/schemas/Id" }] } },
            { name: "sort", in: "query", schema: { allOf: [{ $ref: "#/components/schemas/SortOrder" }] } }
          ],
          responses: { "200": { description: "ok" } }
        }
      }
    }, {
      components: {
        schemas: {
          Id: { type: "integer", format: "int64", minimum: 1 },
          SortOrder: { type: "integer", format: "int32", enum: [0, 1, 2] }
        }
      }
    })
    const { connector, seen } = await sent(spec, "Orders_Get", {
      path_params: { id: "42" },
      query_params: { sort: "1" }
    })
    expect(seen.path).toBe("/orders/42")
    expect(seen.query.get("sort")).toBe("1")
    const connection = await createConnection(node, apiKey, connector.id, { name: "again" })
    const refused = await invoke(node, apiKey, connector.id, connection.id, "Orders_Get", {
      path_params: { id: "0" },
      query_params: { sort: "7" }
    })
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.details.issues.map((i: { path: string }) => i.path)).toEqual([
      "path_params.id",
      "query_params.sort"
    ])
  })
})

describe("an API key the document also declares as a parameter", () => {
  it("leaves it out of the input, so the operation can be called with the connection's key", async () => {
    const spec = document({
      "/me": {
        get: {
          operationId: "me",
          parameters: [
            { name: "Ocp-Apim-Subscription-Key", in: "header", required: true, schema: { type: "string" } },
            { name: "key", in: "query", required: true, schema: { type: "string" } },
            { name: "page", in: "query", schema: { type: "integer" } }
          ],
          responses: { "200": { description: "ok" } }
        }
      }
    }, {
      security: [{ header: [] }, { query: [] }],
      components: {
        securitySchemes: {
          header: { type: "apiKey", in: "header", name: "ocp-apim-subscription-key" },
          query: { type: "apiKey", in: "query", name: "key" }
        }
      }
    })
    const { connector, seen } = await sent(spec, "me", { query_params: { page: 2 } }, {
      type: "api_key",
      value: "sub-1"
    })
    expect(seen.headers["ocp-apim-subscription-key"]).toBe("sub-1")
    expect([...seen.query]).toEqual([["page", "2"]])
    expect(connector.import_report.warnings.map((w: { message: string }) => w.message)).toEqual([
      "header parameter \"Ocp-Apim-Subscription-Key\" is the API key of security scheme \"header\"; " +
      "the connection's credentials send it, so it is not part of the input",
      "query parameter \"key\" is the API key of security scheme \"query\"; " +
      "the connection's credentials send it, so it is not part of the input"
    ])
  })
})

describe("cookies", () => {
  const cookieDocument = () =>
    document({
      "/me": {
        get: {
          operationId: "me",
          parameters: [{ name: "locale", in: "cookie", schema: { type: "string" } }],
          responses: { "200": { description: "ok" } }
        }
      }
    }, {
      security: [{ session: [] }],
      components: { securitySchemes: { session: { type: "apiKey", in: "cookie", name: "sid" } } }
    })

  it("sends the caller's cookie parameters next to the connection's cookie", async () => {
    const { seen } = await sent(cookieDocument(), "me", { headers: { cookie: "locale=fr" } }, {
      type: "api_key",
      value: "s;1"
    })
    expect(seen.headers.cookie).toBe("locale=fr; sid=s%3B1")
  })

  it("refuses a cookie that would replace the connection's, naming it", async () => {
    const connector = await createConnector(node, apiKey, cookieDocument())
    const connection = await createConnection(node, apiKey, connector.id, {
      name: "c",
      credentials: { type: "api_key", value: "secret" }
    })
    const before = target.requests.length
    const response = await invoke(node, apiKey, connector.id, connection.id, "me", {
      headers: { cookie: "locale=fr; sid=mine" }
    })
    expect(response.status).toBe(400)
    const { error } = await response.json()
    expect(error.code).toBe("header_not_allowed")
    expect(error.message).toBe("The cookie `sid` cannot be set: the connection's credentials set it.")
    expect(target.requests.length).toBe(before)
  })
})

describe("a document whose server is relative", () => {
  it("calls the first absolute server when a relative one comes first, as the catalog shows", async () => {
    const connector = await createConnector(node, apiKey, {
      openapi: "3.0.3",
      info: { title: "Mixed", version: "1" },
      servers: [{ url: "/api/v3" }, { url: `${target.url}/v3` }],
      paths: { "/pet": { get: { operationId: "pets", responses: { "200": { description: "ok" } } } } }
    })
    expect(connector.server_url).toBe(`${target.url}/v3`)
    const connection = await createConnection(node, apiKey, connector.id, { name: "c" })
    const before = target.requests.length
    expect((await invoke(node, apiKey, connector.id, connection.id, "pets")).status).toBe(200)
    expect(target.requests[before]!.path).toBe("/v3/pet")
  })

  it("says which server is relative and what server_url should hold", async () => {
    const connector = await createConnector(node, apiKey, {
      openapi: "3.0.3",
      info: { title: "Petstore", version: "1" },
      servers: [{ url: "/api/v3" }],
      paths: { "/pet": { get: { operationId: "pets", responses: { "200": { description: "ok" } } } } }
    })
    const connection = await createConnection(node, apiKey, connector.id, { name: "c" })
    const response = await invoke(node, apiKey, connector.id, connection.id, "pets")
    expect(response.status).toBe(422)
    const { error } = await response.json()
    expect(error.code).toBe("connector_has_no_server_url")
    expect(error.message).toBe(
      "This connector's server URL `/api/v3` is relative: set `server_url` on the connector or the connection " +
        "to the whole base URL, e.g. `https://api.example.com/api/v3`."
    )
  })
})

describe("an operation with servers of its own", () => {
  it("is sent to its own server (GitHub's release uploads), unless the connection overrides every server", async () => {
    const uploads = await startTargetServer()
    try {
      const spec = document({
        "/repos/{owner}/{repo}/releases/{release_id}/assets": {
          post: {
            operationId: "uploadReleaseAsset",
            servers: [{ url: "{origin}/uploads", variables: { origin: { default: uploads.url } } }],
            parameters: [
              { name: "owner", in: "path", required: true, schema: { type: "string" } },
              { name: "repo", in: "path", required: true, schema: { type: "string" } },
              { name: "release_id", in: "path", required: true, schema: { type: "integer" } },
              { name: "name", in: "query", required: true, schema: { type: "string" } }
            ],
            requestBody: { content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
            responses: { "201": { description: "created" } }
          }
        },
        "/repos/{owner}/{repo}/releases": {
          get: {
            operationId: "listReleases",
            parameters: [
              { name: "owner", in: "path", required: true, schema: { type: "string" } },
              { name: "repo", in: "path", required: true, schema: { type: "string" } }
            ],
            responses: { "200": { description: "ok" } }
          }
        }
      })
      const connector = await createConnector(node, apiKey, spec)
      expect(connector.import_report.warnings).toEqual([])
      const connection = await createConnection(node, apiKey, connector.id, { name: "github" })
      const upload = {
        path_params: { owner: "o", repo: "r", release_id: 7 },
        query_params: { name: "notes.txt" },
        body_params: "hello"
      }
      const answered = await invoke(node, apiKey, connector.id, connection.id, "uploadReleaseAsset", upload)
      expect(answered.status).toBe(200)
      expect(uploads.requests.map((r) => `${r.method} ${r.path}?${r.query}`)).toEqual([
        "POST /uploads/repos/o/r/releases/7/assets?name=notes.txt"
      ])
      expect(uploads.requests[0]!.body.toString()).toBe("hello")
      // the other operations keep the document's server
      const before = target.requests.length
      const listed = await invoke(node, apiKey, connector.id, connection.id, "listReleases", {
        path_params: { owner: "o", repo: "r" }
      })
      expect(listed.status).toBe(200)
      expect(target.requests[before]!.path).toBe("/repos/o/r/releases")
      // a connection's server_url (an on-premises install) is the base of every operation
      const onPrem = await createConnection(node, apiKey, connector.id, {
        name: "ghe",
        server_url: `${target.url}/api`
      })
      const viaOnPrem = await invoke(node, apiKey, connector.id, onPrem.id, "uploadReleaseAsset", upload)
      expect(viaOnPrem.status).toBe(200)
      expect(target.requests.at(-1)!.path).toBe("/api/repos/o/r/releases/7/assets")
      expect(uploads.requests).toHaveLength(1)
    } finally {
      await uploads.close()
    }
  })
})
