import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents } from "../access/support.js"
import { type OAuthServer, startOAuthServer } from "../support/OAuthServer.js"
import { eventually } from "../support/Poll.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createConnection, createConnector, invoke, json } from "./support.js"

const client = { id: "switchyard-test", secret: "s3cret:&=" }
let node: TestNode
let provider: OAuthServer

beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
  provider = await startOAuthServer(client)
})
afterAll(async () => {
  await node?.stop()
  await provider?.close()
})

const oauthSpec = (flows: Record<string, unknown>) => ({
  openapi: "3.0.3",
  info: { title: "OAuth API", version: "1" },
  servers: [{ url: `${provider.url}/api` }],
  security: [{ oauth: ["read"] }],
  components: { securitySchemes: { oauth: { type: "oauth2", flows } } },
  paths: { "/me": { get: { operationId: "me", responses: { "200": { description: "ok" } } } } }
})

/** What the user's browser does with connector_page_url: through the provider and back to our callback. */
const signIn = async (pageUrl: string) => {
  const start = await fetch(pageUrl, { redirect: "manual" })
  expect(start.status).toBe(302)
  const authorize = new URL(start.headers.get("location")!)
  expect(authorize.origin + authorize.pathname).toBe(provider.authorizationUrl)
  expect(authorize.searchParams.get("code_challenge_method")).toBe("S256")
  expect(authorize.searchParams.get("scope")).toBe("read")
  const back = await fetch(authorize, { redirect: "manual" })
  const callback = back.headers.get("location")!
  expect(callback.startsWith(`${node.baseUrl}/oauth/connections/callback`)).toBe(true)
  return fetch(callback)
}

const connectWithCode = async () => {
  const { api_key: apiKey, organization_id } = await node.bootstrap()
  const connector = await createConnector(
    node,
    apiKey,
    oauthSpec({
      authorizationCode: {
        authorizationUrl: provider.authorizationUrl,
        tokenUrl: provider.tokenUrl,
        scopes: { read: "Read" }
      }
    })
  )
  const created = await createConnection(node, apiKey, connector.id, {
    name: "oauth",
    credentials: { type: "oauth2", client_id: client.id, client_secret: client.secret }
  })
  return { apiKey, organization_id, connector, created }
}

describe("OAuth2 connections", () => {
  it("completes the authorization-code flow on the connector page and then calls with the token", async () => {
    const { apiKey, connector, created, organization_id } = await connectWithCode()
    expect(created.status).toBe("pending_authorization")
    expect(created.connector_page_url.startsWith(`${node.baseUrl}/oauth/connections/start?state=`)).toBe(true)
    const early = await invoke(node, apiKey, connector.id, created.id, "me")
    expect(early.status).toBe(409)
    expect((await early.json()).error.code).toBe("connection_pending_authorization")

    const done = await signIn(created.connector_page_url)
    expect(done.status).toBe(200)
    expect(await done.text()).toContain("ready")
    const conn = await (await node.fetch(`/v1/tools/connectors/${connector.id}/connections/${created.id}`, { apiKey }))
      .json()
    expect(conn.status).toBe("active")
    // the new credentials are in the audit log, without a token
    const authorized = (await auditEvents(node, organization_id)).filter((e) => e.action === "AUTHORIZE_CONNECTION")
    expect(authorized).toEqual([expect.objectContaining({
      actor_type: "system",
      actor_id: "connection_oauth_callback",
      targets: [{ type: "connection", id: created.id, name: "oauth" }],
      details: { scopes: ["read"] },
      ip: expect.stringMatching(/127\.0\.0\.1/)
    })])
    const response = await invoke(node, apiKey, connector.id, created.id, "me")
    expect(response.status).toBe(200)
    expect((await response.json()).ok).toBe(true)
    // the link is single-use
    expect((await fetch(created.connector_page_url, { redirect: "manual" })).status).toBe(400)
  })

  it("refreshes an expiring token once for many concurrent calls", async () => {
    provider.accessTokenLifetime = 30 // inside the refresh margin: every use wants a fresh one
    const { apiKey, connector, created } = await connectWithCode()
    await signIn(created.connector_page_url)
    provider.accessTokenLifetime = 3600
    const before = provider.tokenRequests.filter((r) => r.grant_type === "refresh_token").length
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => invoke(node, apiKey, connector.id, created.id, "me"))
    )
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200))
    const refreshes = provider.tokenRequests.filter((r) => r.grant_type === "refresh_token").length - before
    expect(refreshes).toBe(1)
  })

  it("marks the connection for re-authentication when the refresh is refused, and re-authorizes", async () => {
    provider.accessTokenLifetime = 30
    const { apiKey, connector, created } = await connectWithCode()
    await signIn(created.connector_page_url)
    provider.refuseRefresh = true
    try {
      const response = await invoke(node, apiKey, connector.id, created.id, "me")
      expect(response.status).toBe(409)
      expect((await response.json()).error.code).toBe("connection_needs_reauthentication")
      const conn =
        await (await node.fetch(`/v1/tools/connectors/${connector.id}/connections/${created.id}`, { apiKey })).json()
      expect(conn.status).toBe("needs_reauthentication")
      provider.accessTokenLifetime = 3600
      const again = await node.fetch(`/v1/tools/connections/${created.id}/authorize`, { method: "POST", apiKey })
      expect(again.status).toBe(200)
      expect((await signIn((await again.json()).connector_page_url)).status).toBe(200)
      expect((await invoke(node, apiKey, connector.id, created.id, "me")).status).toBe(200)
    } finally {
      provider.refuseRefresh = false
      provider.accessTokenLifetime = 3600
    }
  })

  it("a sign-in finishing after a PATCH gave new credentials does not write the old ones back", async () => {
    const { apiKey, connector, created } = await connectWithCode()
    const path = `/v1/tools/connectors/${connector.id}/connections/${created.id}`
    // the code's exchange, with the credentials the sign-in began with, waits at the token endpoint
    provider.holdTokens = true
    try {
      const first = signIn(created.connector_page_url)
      await eventually(() => provider.held.length === 1 || undefined, 10_000, "the code's exchange")
      const patched = await node.fetch(path, {
        ...json({ credentials: { type: "oauth2", client_id: client.id, client_secret: client.secret } }),
        method: "PATCH",
        apiKey
      })
      expect(patched.status).toBe(200)
      const again = await patched.json()
      expect(again.status).toBe("pending_authorization")
      provider.held.shift()!()
      const done = await first
      expect(done.status).toBe(400)
      expect(await done.text()).toContain("sign in again")
      // the new credentials stand, waiting for their own sign-in
      expect((await (await node.fetch(path, { apiKey })).json()).status).toBe("pending_authorization")
      expect((await signIn(again.connector_page_url)).status).toBe(200)
      expect((await (await node.fetch(path, { apiKey })).json()).status).toBe("active")
    } finally {
      provider.holdTokens = false
      provider.held.splice(0).forEach((answer) => answer())
    }
  })

  /** A new organization's connection to a connector of the client-credentials flow. */
  const clientCredentialsConnection = async (name: string) => {
    const { api_key: apiKey } = await node.bootstrap()
    const connector = await createConnector(
      node,
      apiKey,
      oauthSpec({ clientCredentials: { tokenUrl: provider.tokenUrl, scopes: {} } })
    )
    const created = await createConnection(node, apiKey, connector.id, {
      name,
      credentials: { type: "oauth2", client_id: client.id, client_secret: client.secret }
    })
    return { apiKey, connector, created }
  }

  it("uses the client-credentials flow without a browser", async () => {
    const { apiKey, connector, created } = await clientCredentialsConnection("machine")
    expect(created.status).toBe("active")
    expect(created.connector_page_url).toBeUndefined()
    expect((await invoke(node, apiKey, connector.id, created.id, "me")).status).toBe(200)
  })

  it("gets a new token once when the target answers 401 (a revoked token), and passes a second 401 through", async () => {
    const { apiKey, connector, created } = await clientCredentialsConnection("revoked")
    const grants = () => provider.tokenRequests.filter((r) => r.grant_type === "client_credentials").length
    const first = await invoke(node, apiKey, connector.id, created.id, "me")
    expect(first.status).toBe(200)
    const firstToken = (await first.json()).token
    // the provider revokes it before it expires
    provider.validTokens.delete(firstToken)
    const before = grants()
    const retried = await invoke(node, apiKey, connector.id, created.id, "me")
    expect(retried.status).toBe(200)
    expect((await retried.json()).token).not.toBe(firstToken)
    expect(grants() - before).toBe(1)
    // a target that refuses the new token too: its 401 is the answer, after one more token and no loop
    provider.accessTokenLifetime = -1
    try {
      provider.validTokens.clear()
      const refused = await invoke(node, apiKey, connector.id, created.id, "me")
      expect(refused.status).toBe(401)
      expect(refused.headers.get("x-switchyard-error")).toBeNull()
      expect(await refused.json()).toEqual({ error: "invalid_token" })
      expect(grants() - before).toBe(2)
      const connection =
        await (await node.fetch(`/v1/tools/connectors/${connector.id}/connections/${created.id}`, { apiKey })).json()
      expect(connection.status).toBe("active")
    } finally {
      provider.accessTokenLifetime = 3600
    }
  })

  it("refuses a forged or unknown state on the callback", async () => {
    const response = await fetch(`${node.baseUrl}/oauth/connections/callback?code=x&state=forged`)
    expect(response.status).toBe(400)
    expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
  })
})
