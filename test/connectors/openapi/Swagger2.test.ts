import { describe, expect, it } from "vitest"
import { importFixture, issuesOf, operation, warningsAt } from "./fixtures.js"

// JSON text this time
const shop = importFixture("shop-swagger2.json")

describe("Swagger 2.0 shop", () => {
  it("builds servers from schemes, host and basePath", () => {
    expect(shop.specVersion).toBe("2.0")
    expect(shop.title).toBe("Shop")
    expect(shop.version).toBe("3.2.1")
    expect(shop.servers).toEqual(["https://shop.example.com/api/v1", "http://shop.example.com/api/v1"])
  })

  it("maps securityDefinitions to security schemes", () => {
    expect(shop.securitySchemes).toEqual({
      basicAuth: { type: "http", scheme: "basic", description: "Staff accounts" },
      apiKeyQuery: { type: "apiKey", in: "query", name: "api_key" },
      oauth: {
        type: "oauth2",
        flows: {
          authorizationCode: {
            authorizationUrl: "https://shop.example.com/oauth/authorize",
            tokenUrl: "https://shop.example.com/oauth/token",
            scopes: { "orders:read": "Read orders", "orders:write": "Create and change orders" }
          }
        }
      },
      machine: {
        type: "oauth2",
        flows: {
          clientCredentials: {
            tokenUrl: "https://shop.example.com/oauth/token",
            scopes: { "orders:read": "Read orders" }
          }
        }
      }
    })
    expect(warningsAt(shop, "/securityDefinitions/legacyBrowser")).toEqual([
      "oauth2 scheme has no supported flow (authorization code or client credentials); scheme ignored"
    ])
    expect(warningsAt(shop, "/securityDefinitions/legacyBrowser/flow")).toEqual([
      "oauth2 \"implicit\" flow is not supported; ignored"
    ])
    expect(shop.security).toEqual([{ apiKeyQuery: [] }])
    expect(operation(shop, "post_orders").security).toEqual([{ oauth: ["orders:write"] }])
    expect(operation(shop, "delete_orders_orderId").security).toEqual([{ basicAuth: [] }])
  })

  it("maps collectionFormat to style and explode", () => {
    const list = operation(shop, "get_orders")
    expect(list.parameters.map((p) => [p.name, p.in, p.style, p.explode])).toEqual([
      ["page", "query", "form", true],
      ["status", "query", "form", true],
      ["ids", "query", "form", false],
      ["labels", "query", "pipeDelimited", false]
    ])
    expect(list.parameters[0]?.schema).toEqual({ type: "integer", minimum: 1, default: 1 })
    expect(list.parameters[1]?.schema).toEqual({
      type: "array",
      items: { type: "string", enum: ["open", "paid", "shipped"] }
    })
    // sent pipe-delimited (RequestBuilder): nothing to warn about
    expect(warningsAt(shop, "/paths/~1orders/get/parameters/3/collectionFormat")).toEqual([])
  })

  it("turns an in: body parameter into a JSON body and keeps header parameters", () => {
    const create = operation(shop, "post_orders")
    expect(create.parameters.map((p) => `${p.in}:${p.name}`)).toEqual(["header:Idempotency-Key"])
    expect(create.body?.contentType).toBe("application/json")
    expect(create.body?.required).toBe(true)
    const schema = create.body!.schema as any
    expect(schema.description).toBe("The order to place")
    expect(schema.properties.coupon).toEqual({ type: ["string", "null"] })
    expect(schema.properties.items.items.properties.quantity).toEqual({ type: "integer", exclusiveMinimum: 0 })
    expect(JSON.stringify(schema)).not.toContain("example")
    expect(create.input.required).toEqual(["body_params", "headers"])
  })

  it("validates createOrder input", () => {
    const create = operation(shop, "post_orders")
    const order = {
      items: [{ sku: "TSHIRT-M", quantity: 2 }],
      coupon: null,
      shipping: { line1: "1 Main St", country: "NL" }
    }
    expect(issuesOf(create, { body_params: order, headers: { "Idempotency-Key": "k-12345678" } })).toBe("ok")
    expect(
      issuesOf(create, { body_params: { items: [{ sku: "X", quantity: 0 }] }, headers: { "Idempotency-Key": "short" } })
    )
      .toEqual([
        "body_params.items.0.quantity: must be > 0",
        "headers.Idempotency-Key: must NOT have fewer than 8 characters"
      ])
    expect(issuesOf(create, { body_params: order })).toEqual(["headers: is required"])
  })

  it("turns formData parameters with a file into a multipart body", () => {
    const upload = operation(shop, "post_orders_orderId_attachments")
    expect(upload.parameters.map((p) => `${p.in}:${p.name}`)).toEqual(["path:orderId"])
    expect(upload.body).toEqual({
      contentType: "multipart/form-data",
      required: true,
      schema: {
        type: "object",
        properties: {
          file: { type: "string", format: "binary", description: "The document" },
          note: { type: "string" }
        },
        required: ["file"]
      }
    })
    expect(issuesOf(upload, { path_params: { orderId: "ord_1a" }, body_params: { file: "aGVsbG8=" } })).toBe("ok")
    expect(issuesOf(upload, { path_params: { orderId: "1a" }, body_params: {} })).toEqual([
      "path_params.orderId: must match pattern \"^ord_[a-z0-9]+$\"",
      "body_params.file: is required"
    ])
  })

  it("turns formData parameters without a file into a urlencoded body", () => {
    const note = operation(shop, "post_orders_orderId_notes")
    expect(note.body?.contentType).toBe("application/x-www-form-urlencoded")
    expect(note.body?.schema).toEqual({
      type: "object",
      properties: { text: { type: "string", maxLength: 500 }, internal: { type: "boolean", default: false } },
      required: ["text"]
    })
  })

  it("picks a +json type from consumes and leaves an optional body optional", () => {
    const update = operation(shop, "put_customers_customerId")
    expect(update.body?.contentType).toBe("application/vnd.shop.customer+json")
    expect(update.body?.required).toBe(false)
    expect(update.input.required).toEqual(["path_params"])
    expect(issuesOf(update, { path_params: { customerId: 12 } })).toBe("ok")
    expect(issuesOf(update, { path_params: { customerId: "12" } })).toEqual(["path_params.customerId: must be integer"])
  })
})
