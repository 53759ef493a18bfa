import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Poll.js"
import { echo, startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createConnection, createConnector, invoke, json } from "./support.js"

/** How the token endpoint answers a client-credentials grant. */
type TokenMode = "token" | "silent" | "html" | "invalid_client" | "held"

let node: TestNode
let server: TargetServer
let mode: TokenMode = "token"
/** In mode `held`, the token requests waiting for an answer: each refuses the client once called. */
const held: Array<() => void> = []

beforeAll(async () => {
  // a short call deadline: a silent token endpoint must not hold a call longer than it
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1", SWITCHYARD_CONNECTOR_TIMEOUT: "2 seconds" })
  server = await startTargetServer((request, response) => {
    if (request.path !== "/token") return echo(request, response)
    switch (mode) {
      case "token":
        response.writeHead(200, { "content-type": "application/json" })
        return void response.end(JSON.stringify({ access_token: "tok", token_type: "Bearer", expires_in: 3600 }))
      case "silent":
        return // never answers
      case "held":
        return void held.push(() => {
          response.writeHead(401, { "content-type": "application/json" })
          response.end(JSON.stringify({ error: "invalid_client", error_description: "bad secret" }))
        })
      case "html":
        response.writeHead(200, { "content-type": "text/html" })
        return void response.end("<html>maintenance</html>")
      case "invalid_client":
        response.writeHead(401, { "content-type": "application/json" })
        return void response.end(JSON.stringify({ error: "invalid_client", error_description: "bad secret" }))
    }
  })
})
afterAll(async () => {
  await node?.stop()
  await server?.close()
})

const clientCredentialsSpec = () => ({
  openapi: "3.0.3",
  info: { title: "Machine API", version: "1" },
  servers: [{ url: `${server.url}/api` }],
  security: [{ oauth: [] }],
  components: {
    securitySchemes: {
      oauth: { type: "oauth2", flows: { clientCredentials: { tokenUrl: `${server.url}/token`, scopes: {} } } }
    }
  },
  paths: { "/me": { get: { operationId: "me", responses: { "200": { description: "ok" } } } } }
})

const connect = async (credentials: Record<string, unknown> = {}) => {
  const { api_key: apiKey } = await node.bootstrap()
  const connector = await createConnector(node, apiKey, clientCredentialsSpec())
  const connection = await createConnection(node, apiKey, connector.id, {
    name: "machine",
    credentials: { type: "oauth2", client_id: "id", client_secret: "secret", ...credentials }
  })
  const status = async () =>
    (await (await node.fetch(`/v1/tools/connectors/${connector.id}/connections/${connection.id}`, { apiKey })).json())
      .status
  return { apiKey, connector, connection, status }
}

describe("an OAuth2 client-credentials token endpoint that fails", () => {
  it("that never answers fails the call within the connector timeout, and the connection stays active", async () => {
    mode = "silent"
    try {
      const { apiKey, connection, connector, status } = await connect()
      const started = Date.now()
      const response = await invoke(node, apiKey, connector.id, connection.id, "me")
      expect(Date.now() - started).toBeLessThan(10_000)
      expect(response.status).toBe(504)
      const body = await response.json()
      expect(body.error.code).toBe("upstream_timeout")
      expect(body.error.message).toContain("token endpoint did not answer within 2 s")
      expect(await status()).toBe("active")
      mode = "token"
      expect((await invoke(node, apiKey, connector.id, connection.id, "me")).status).toBe(200)
    } finally {
      mode = "token"
    }
  }, 30_000)

  it("that answers without a token is a bad gateway, not a sign-in to redo", async () => {
    mode = "html"
    try {
      const { apiKey, connection, connector, status } = await connect()
      const response = await invoke(node, apiKey, connector.id, connection.id, "me")
      expect(response.status).toBe(502)
      const body = await response.json()
      expect(body.error.code).toBe("upstream_unreachable")
      expect(body.error.message).toContain("answered HTTP 200 without an access_token")
      expect(await status()).toBe("active")
    } finally {
      mode = "token"
    }
  })

  it("that refuses the client asks for new credentials, which a PATCH gives", async () => {
    mode = "invalid_client"
    try {
      const { apiKey, connection, connector, status } = await connect()
      const response = await invoke(node, apiKey, connector.id, connection.id, "me")
      expect(response.status).toBe(409)
      const body = await response.json()
      expect(body.error.code).toBe("connection_needs_reauthentication")
      expect(body.error.message).toContain("invalid_client (bad secret)")
      expect(body.error.message).toContain("PATCH")
      expect(body.error.message).not.toContain("authorize")
      expect(await status()).toBe("needs_reauthentication")
      const again = await invoke(node, apiKey, connector.id, connection.id, "me")
      expect((await again.json()).error.message).toContain("PATCH")
      // there is no sign-in to redo
      const authorize = await node.fetch(`/v1/tools/connections/${connection.id}/authorize`, { method: "POST", apiKey })
      expect(authorize.status).toBe(400)
      mode = "token"
      const patched = await node.fetch(`/v1/tools/connectors/${connector.id}/connections/${connection.id}`, {
        ...json({ credentials: { type: "oauth2", client_id: "id", client_secret: "rotated" } }),
        method: "PATCH",
        apiKey
      })
      expect(patched.status).toBe(200)
      expect(await status()).toBe("active")
      const ok = await invoke(node, apiKey, connector.id, connection.id, "me")
      expect(ok.status).toBe(200)
      expect((await ok.json()).headers.authorization).toBe("Bearer tok")
    } finally {
      mode = "token"
    }
  })
})

describe("how the client authenticates at the token endpoint", () => {
  const lastTokenRequest = () => {
    const request = server.requests.filter((r) => r.path === "/token").at(-1)!
    return { authorization: request.headers.authorization, form: new URLSearchParams(request.body.toString()) }
  }

  it("sends an HTTP Basic header by default (client_secret_basic), the secret never in the form", async () => {
    const { apiKey, connection, connector } = await connect({ client_secret: "s3cret&=" })
    expect((await invoke(node, apiKey, connector.id, connection.id, "me")).status).toBe(200)
    const { authorization, form } = lastTokenRequest()
    // form-encoded before the Basic encoding (RFC 6749 §2.3.1)
    expect(authorization).toBe(`Basic ${Buffer.from("id:s3cret%26%3D").toString("base64")}`)
    expect(form.get("grant_type")).toBe("client_credentials")
    expect(form.has("client_secret")).toBe(false)
  })

  it("puts client_id and client_secret in the form, and no Basic header, with client_secret_post", async () => {
    const { apiKey, connection, connector } = await connect({
      client_secret: "s3cret&=",
      token_endpoint_auth_method: "client_secret_post"
    })
    const response = await invoke(node, apiKey, connector.id, connection.id, "me")
    expect(response.status).toBe(200)
    expect((await response.json()).headers.authorization).toBe("Bearer tok")
    const { authorization, form } = lastTokenRequest()
    expect(authorization).toBeUndefined()
    expect(Object.fromEntries(form)).toEqual({
      grant_type: "client_credentials",
      client_id: "id",
      client_secret: "s3cret&="
    })
  })

  it("refuses a method it does not know, naming the field", async () => {
    const { api_key: apiKey } = await node.bootstrap()
    const connector = await createConnector(node, apiKey, clientCredentialsSpec())
    const refused = await node.fetch(`/v1/tools/connectors/${connector.id}/connections`, {
      ...json({
        name: "machine",
        credentials: {
          type: "oauth2",
          client_id: "id",
          client_secret: "secret",
          token_endpoint_auth_method: "private_key_jwt"
        }
      }),
      method: "POST",
      apiKey
    })
    expect(refused.status).toBe(400)
    expect(JSON.stringify(await refused.json())).toContain("token_endpoint_auth_method")
  })
})

describe("new client credentials given while a token is being got with the old ones", () => {
  it("hold: the old ones' refusal neither marks the connection nor writes them back; the call takes the new", async () => {
    mode = "held"
    try {
      const { apiKey, connection, connector, status } = await connect()
      const path = `/v1/tools/connectors/${connector.id}/connections/${connection.id}`
      const before = (await (await node.fetch(path, { apiKey })).json()).updated_at
      // the call's token request, with the secret it had, waits at the token endpoint
      const call = invoke(node, apiKey, connector.id, connection.id, "me")
      await eventually(() => held.length === 1 || undefined, 10_000, "the token request")
      const patched = node.fetch(path, {
        ...json({ credentials: { type: "oauth2", client_id: "id", client_secret: "rotated" } }),
        method: "PATCH",
        apiKey
      })
      // the new secret is stored; then the endpoint refuses the old one
      await eventually(
        async () => (await (await node.fetch(path, { apiKey })).json()).updated_at !== before || undefined,
        10_000,
        "the new credentials"
      )
      mode = "token"
      held.shift()!()
      // the call goes on with the new secret
      const answered = await call
      expect(answered.status, await answered.clone().text()).toBe(200)
      expect((await answered.json()).headers.authorization).toBe("Bearer tok")
      expect((await patched).status).toBe(200)
      expect(await status()).toBe("active")
      const secrets = server.requests.filter((r) => r.path === "/token").slice(-2)
        .map((r) => Buffer.from(r.headers.authorization!.slice("Basic ".length), "base64").toString())
      expect(secrets).toEqual(["id:secret", "id:rotated"])
      // and the next one: the new secret is what is stored
      expect((await invoke(node, apiKey, connector.id, connection.id, "me")).status).toBe(200)
    } finally {
      mode = "token"
      held.splice(0).forEach((answer) => answer())
    }
  })
})
