import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  authorizeUrl,
  Browser,
  hiddenField,
  initialize,
  mcpPost,
  obtainTokens,
  pkce,
  REDIRECT_URI,
  registerClient,
  signedUpAdmin,
  signInAndConsent,
  token
} from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
let admin: Awaited<ReturnType<typeof signedUpAdmin>>
beforeAll(async () => {
  node = await startTestNode()
  admin = await signedUpAdmin(node)
})
afterAll(() => node?.stop())

const ping = (accessToken: string) =>
  mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25" } }, {
    authorization: `Bearer ${accessToken}`
  })

describe("metadata", () => {
  it("names the MCP URL as the resource, at the root and path-inserted well-known addresses", async () => {
    for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp/"]) {
      const prm = await (await fetch(node.baseUrl + path)).json()
      expect(prm).toMatchObject({
        resource: `${node.baseUrl}/mcp/`,
        authorization_servers: [node.baseUrl],
        scopes_supported: ["mcp:read", "mcp:write"]
      })
    }
    const as = await (await fetch(`${node.baseUrl}/.well-known/oauth-authorization-server`)).json()
    expect(as).toMatchObject({
      issuer: node.baseUrl,
      code_challenge_methods_supported: ["S256"],
      registration_endpoint: `${node.baseUrl}/oauth/register`,
      client_id_metadata_document_supported: true
    })
  })
})

describe("the MCP resource with and without its trailing slash", () => {
  it("is named in the form of the metadata address asked, and a client at /mcp is pointed at …/mcp", async () => {
    const bare = await (await fetch(`${node.baseUrl}/.well-known/oauth-protected-resource/mcp`)).json()
    expect(bare.resource).toBe(`${node.baseUrl}/mcp`)
    const slashed = await (await fetch(`${node.baseUrl}/.well-known/oauth-protected-resource/mcp/`)).json()
    expect(slashed.resource).toBe(`${node.baseUrl}/mcp/`)
    const atBare = await mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 1, method: "ping" }, {}, "/mcp")
    expect(atBare.status).toBe(401)
    expect(atBare.headers.get("www-authenticate")).toContain(
      `resource_metadata="${node.baseUrl}/.well-known/oauth-protected-resource/mcp"`
    )
    const atSlashed = await mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 1, method: "ping" }, {})
    expect(atSlashed.headers.get("www-authenticate")).toContain(
      `resource_metadata="${node.baseUrl}/.well-known/oauth-protected-resource"`
    )
  })

  it("accepts <base>/mcp and <base>/mcp/ as one resource: authorize, token, refresh and the endpoint", async () => {
    const { client, tokens } = await obtainTokens(node, admin.email, { resource: `${node.baseUrl}/mcp` })
    const bearer = { authorization: `Bearer ${tokens.access_token}` }
    for (const path of ["/mcp", "/mcp/"]) {
      const answer = await mcpPost(node.baseUrl, initialize, bearer, path)
      expect({ path, status: answer.status }).toEqual({ path, status: 200 })
    }
    // the grant is recorded under the one name REST shows
    const list = await (await node.fetch("/v1/oauth/authorizations", { apiKey: admin.api_key })).json()
    expect(list.items.find((a: { client_id: string }) => a.client_id === client.client_id).resource).toBe(
      `${node.baseUrl}/mcp/`
    )
    let refresh = tokens.refresh_token
    for (const resource of [`${node.baseUrl}/mcp`, `${node.baseUrl}/mcp/`]) {
      const rotated = await token(node, {
        grant_type: "refresh_token",
        refresh_token: refresh,
        client_id: client.client_id,
        resource
      })
      expect({ resource, status: rotated.status }).toEqual({ resource, status: 200 })
      refresh = rotated.body.refresh_token
    }
    // authorized with the slash, exchanged without it
    const { challenge, verifier } = pkce()
    const { location } = await signInAndConsent(
      authorizeUrl(node, { client_id: client.client_id, challenge, resource: `${node.baseUrl}/mcp/` }),
      admin.email
    )
    const exchanged = await token(node, {
      grant_type: "authorization_code",
      code: new URL(location).searchParams.get("code")!,
      code_verifier: verifier,
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      resource: `${node.baseUrl}/mcp`
    })
    expect(exchanged.status).toBe(200)
    expect(
      (await mcpPost(node.baseUrl, initialize, { authorization: `Bearer ${exchanged.body.access_token}` }, "/mcp"))
        .status
    ).toBe(200)
    // a name that only resembles it is still another resource
    const near = await fetch(
      authorizeUrl(node, { client_id: client.client_id, challenge, resource: `${node.baseUrl}/mcp//` }),
      { redirect: "manual" }
    )
    expect(new URL(near.headers.get("location")!).searchParams.get("error")).toBe("invalid_target")
  })
})

describe("registration", () => {
  it("accepts https and loopback redirect URIs only", async () => {
    expect((await registerClient(node, { redirect_uris: ["https://app.example.com/cb"] })).status).toBe(201)
    expect((await registerClient(node, { redirect_uris: ["http://[::1]:8000/cb"] })).status).toBe(201)
    const plain = await registerClient(node, { redirect_uris: ["http://app.example.com/cb"] })
    expect(plain).toMatchObject({ status: 400, body: { error: "invalid_redirect_uri" } })
    const custom = await registerClient(node, { redirect_uris: ["myapp://cb"] })
    expect(custom.body.error).toBe("invalid_redirect_uri")
    const none = await registerClient(node, { redirect_uris: [] })
    expect(none).toMatchObject({ status: 400, body: { error: "invalid_client_metadata" } })
  })

  it("shows a confidential client's secret once, and the token endpoint requires it", async () => {
    const { body: client } = await registerClient(node, { token_endpoint_auth_method: "client_secret_basic" })
    expect(client.client_secret).toMatch(/^sy_cs_/)
    const refused = await token(node, {
      grant_type: "authorization_code",
      code: "x",
      code_verifier: "y",
      client_id: client.client_id
    })
    expect(refused).toMatchObject({ status: 401, body: { error: "invalid_client" } })
    const wrong = await token(node, { grant_type: "authorization_code", code: "x", code_verifier: "y" }, {
      authorization: `Basic ${Buffer.from(`${client.client_id}:nope`).toString("base64")}`
    })
    expect(wrong.body.error).toBe("invalid_client")
  })
})

describe("authorization endpoint", () => {
  let clientId: string
  beforeAll(async () => {
    clientId = (await registerClient(node)).body.client_id
  })
  const redirected = async (url: string) => {
    const response = await fetch(url, { redirect: "manual" })
    expect(response.status).toBe(302)
    return new URL(response.headers.get("location")!)
  }

  it("sends the browser to the sign-in page with the query string carried over", async () => {
    const url = authorizeUrl(node, { client_id: clientId, challenge: pkce().challenge })
    const location = await redirected(url)
    expect(location.origin + location.pathname).toBe(`${node.baseUrl}/oauth_login`)
    expect(location.search).toBe(new URL(url).search)
  })

  it("refuses a missing challenge and the plain method, back to the client with state", async () => {
    const missing = await redirected(authorizeUrl(node, { client_id: clientId, challenge: undefined }))
    expect(missing.searchParams.get("error")).toBe("invalid_request")
    expect(missing.searchParams.get("state")).toBe("st-123")
    const plain = await redirected(
      authorizeUrl(node, { client_id: clientId, challenge: pkce().challenge, code_challenge_method: "plain" })
    )
    expect(plain.searchParams.get("error")).toBe("invalid_request")
    expect(plain.origin + plain.pathname).toBe(REDIRECT_URI)
  })

  it("never redirects to an address the client did not register, nor for an unknown client", async () => {
    for (
      const url of [
        authorizeUrl(node, {
          client_id: clientId,
          challenge: pkce().challenge,
          redirect_uri: "http://127.0.0.1:53682/other"
        }),
        authorizeUrl(node, { client_id: clientId, challenge: pkce().challenge, redirect_uri: `${REDIRECT_URI}/` }),
        authorizeUrl(node, { client_id: "sy_client_unknown", challenge: pkce().challenge })
      ]
    ) {
      const response = await fetch(url, { redirect: "manual" })
      expect(response.status).toBe(400)
      expect(response.headers.get("location")).toBeNull()
    }
  })

  it("refuses a resource it does not protect", async () => {
    const location = await redirected(
      authorizeUrl(node, {
        client_id: clientId,
        challenge: pkce().challenge,
        resource: "https://elsewhere.example/mcp/"
      })
    )
    expect(location.searchParams.get("error")).toBe("invalid_target")
  })

  it("grants a client no scope beyond the one it registered (RFC 7591 scope)", async () => {
    const reader = (await registerClient(node, { scope: "mcp:read" })).body.client_id
    const wider = await redirected(
      authorizeUrl(node, { client_id: reader, challenge: pkce().challenge, scope: "mcp:write" })
    )
    expect(wider.searchParams.get("error")).toBe("invalid_scope")
    // asking for nothing is asking for what it registered, not for every scope
    const { challenge, verifier } = pkce()
    const { location } = await signInAndConsent(authorizeUrl(node, { client_id: reader, challenge }), admin.email)
    const exchanged = await token(node, {
      grant_type: "authorization_code",
      code: new URL(location).searchParams.get("code")!,
      code_verifier: verifier,
      client_id: reader,
      redirect_uri: REDIRECT_URI
    })
    expect(exchanged.status).toBe(200)
    expect(exchanged.body.scope).toBe("mcp:read")
  })

  it("refuses Client ID Metadata Documents on internal addresses (fetched through the egress guard)", async () => {
    const response = await fetch(
      authorizeUrl(node, { client_id: "https://127.0.0.1:9/client.json", challenge: pkce().challenge }),
      { redirect: "manual" }
    )
    expect(response.status).toBe(400)
    expect((await response.json()).error_description).toMatch(/metadata document/)
  })

  it("answers access_denied when the person denies", async () => {
    const { location } = await signInAndConsent(
      authorizeUrl(node, { client_id: clientId, challenge: pkce().challenge }),
      admin.email,
      { decision: "deny" }
    )
    const url = new URL(location)
    expect(url.searchParams.get("error")).toBe("access_denied")
    expect(url.searchParams.get("state")).toBe("st-123")
    expect(url.searchParams.get("code")).toBeNull()
  })
})

describe("sign-in and consent pages", () => {
  it("are unframeable, uncached and refuse posts without the CSRF token or from another origin", async () => {
    const { body: client } = await registerClient(node)
    const url = authorizeUrl(node, { client_id: client.client_id, challenge: pkce().challenge })
    const browser = new Browser()
    const login = (await browser.get(url)).headers.get("location")!
    const page = await browser.get(login)
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
    expect(page.headers.get("cache-control")).toBe("no-store")
    const html = await page.text()
    const form = { request: hiddenField(html, "request"), action: "sign_in", email: admin.email, password: "x" }
    expect((await browser.post(`${node.baseUrl}/oauth_login`, { ...form, csrf: "forged" })).status).toBe(403)
    const foreign = await browser.post(`${node.baseUrl}/oauth_login`, { ...form, csrf: hiddenField(html, "csrf") }, {
      origin: "https://evil.example"
    })
    expect(foreign.status).toBe(403)
    const wrong = await browser.post(`${node.baseUrl}/oauth_login`, { ...form, csrf: hiddenField(html, "csrf") })
    expect(wrong.status).toBe(401)
    expect(await wrong.text()).toContain("Wrong e-mail or password")
    expect(browser.cookies.has("sy_session")).toBe(false)
  })
})

describe("token endpoint", () => {
  it("issues hashed-looking opaque tokens with no-store, and checks the PKCE verifier", async () => {
    const { body: client } = await registerClient(node)
    const { challenge } = pkce()
    const { location } = await signInAndConsent(
      authorizeUrl(node, { client_id: client.client_id, challenge }),
      admin.email
    )
    const code = new URL(location).searchParams.get("code")!
    const wrong = await token(node, {
      grant_type: "authorization_code",
      code,
      code_verifier: pkce().verifier,
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI
    })
    expect(wrong).toMatchObject({ status: 400, body: { error: "invalid_grant" } })
    expect(wrong.headers.get("cache-control")).toBe("no-store")
    // the refused exchange used the code up, and the retry is told so, not that the code was "used"
    const retried = await token(node, {
      grant_type: "authorization_code",
      code,
      code_verifier: pkce().verifier,
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI
    })
    expect(retried.body).toEqual({
      error: "invalid_grant",
      error_description: "This authorization code was already presented: a code works once, a refused exchange " +
        "(e.g. a wrong `code_verifier`) included. Start the authorization again."
    })
  })

  it("denies a replayed code and revokes what was issued from it", async () => {
    const { client, code, tokens, verifier } = await obtainTokens(node, admin.email)
    expect((await ping(tokens.access_token)).status).toBe(200)
    const again = await token(node, {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI
    })
    expect(again).toMatchObject({ status: 400, body: { error: "invalid_grant" } })
    expect((await ping(tokens.access_token)).status).toBe(401)
    const refresh = await token(node, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: client.client_id
    })
    expect(refresh.body.error).toBe("invalid_grant")
  })

  it("checks redirect_uri against the authorization request", async () => {
    const { body: client } = await registerClient(node, { redirect_uris: [REDIRECT_URI, "http://127.0.0.1:53682/two"] })
    const { challenge, verifier } = pkce()
    const { location } = await signInAndConsent(
      authorizeUrl(node, { client_id: client.client_id, challenge }),
      admin.email
    )
    const exchanged = await token(node, {
      grant_type: "authorization_code",
      code: new URL(location).searchParams.get("code")!,
      code_verifier: verifier,
      client_id: client.client_id,
      redirect_uri: "http://127.0.0.1:53682/two"
    })
    expect(exchanged.body.error).toBe("invalid_grant")
  })

  it("rotates refresh tokens, and a reused one revokes the whole family", async () => {
    const { client, tokens } = await obtainTokens(node, admin.email)
    const rotated = await token(node, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: client.client_id
    })
    expect(rotated.status).toBe(200)
    expect(rotated.body.refresh_token).not.toBe(tokens.refresh_token)
    expect((await ping(rotated.body.access_token)).status).toBe(200)
    const reused = await token(node, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: client.client_id
    })
    expect(reused).toMatchObject({ status: 400, body: { error: "invalid_grant" } })
    expect((await ping(rotated.body.access_token)).status).toBe(401)
    const next = await token(node, {
      grant_type: "refresh_token",
      refresh_token: rotated.body.refresh_token,
      client_id: client.client_id
    })
    expect(next.body.error).toBe("invalid_grant")
  })

  it("a refused refresh does not revoke the grant: the corrected retry rotates as usual", async () => {
    const { client, tokens } = await obtainTokens(node, admin.email, { scope: "mcp:read" })
    const refresh = (form: Record<string, string> = {}, clientId = client.client_id) =>
      token(node, { grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: clientId, ...form })
    const wrongResource = await refresh({ resource: "https://elsewhere.example/mcp/" })
    expect(wrongResource).toMatchObject({ status: 400, body: { error: "invalid_target" } })
    const otherMcp = await refresh({ resource: `${node.baseUrl}/switchyard-mcp/` })
    expect(otherMcp.body.error).toBe("invalid_target")
    const wider = await refresh({ scope: "mcp:read mcp:write" })
    expect(wider).toMatchObject({ status: 400, body: { error: "invalid_scope" } })
    const { body: stranger } = await registerClient(node)
    const foreign = await refresh({}, stranger.client_id)
    expect(foreign).toMatchObject({ status: 400, body: { error: "invalid_grant" } })
    // none of those was a use: the grant lives, and the token rotates once
    expect((await ping(tokens.access_token)).status).toBe(200)
    const retried = await refresh({ resource: `${node.baseUrl}/mcp/` })
    expect(retried.status).toBe(200)
    expect(retried.body.scope).toBe("mcp:read")
    expect((await ping(retried.body.access_token)).status).toBe(200)
    expect((await ping(tokens.access_token)).status).toBe(200)
    // and a token really rotated out still ends the family when it comes back
    expect((await refresh()).body.error).toBe("invalid_grant")
    expect((await ping(retried.body.access_token)).status).toBe(401)
  })

  it("a refresh asking for less scope gets an access token of only that scope; the grant keeps its own", async () => {
    const { client, tokens } = await obtainTokens(node, admin.email)
    const narrowed = await token(node, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: client.client_id,
      scope: "mcp:read"
    })
    expect(narrowed.status).toBe(200)
    expect(narrowed.body.scope).toBe("mcp:read")
    const reader = { authorization: `Bearer ${narrowed.body.access_token}` }
    const session = (await ping(narrowed.body.access_token)).headers.get("mcp-session-id")!
    const write = await mcpPost(node.baseUrl, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "cancel_task", arguments: { task_id: "x" } }
    }, { ...reader, "mcp-session-id": session })
    expect(write.status).toBe(403)
    expect((await write.json()).error.code).toBe("insufficient_scope")
    // RFC 6749 section 6: the new refresh token has the scope of the one it replaces
    const widened = await token(node, {
      grant_type: "refresh_token",
      refresh_token: narrowed.body.refresh_token,
      client_id: client.client_id
    })
    expect(widened.status).toBe(200)
    expect(widened.body.scope).toBe("mcp:read mcp:write")
  })

  it("revokes a refresh token's family at the revocation endpoint", async () => {
    const { client, tokens } = await obtainTokens(node, admin.email)
    const revoked = await fetch(`${node.baseUrl}/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: tokens.refresh_token, client_id: client.client_id }).toString()
    })
    expect(revoked.status).toBe(200)
    expect((await ping(tokens.access_token)).status).toBe(401)
  })

  it("answers bad input with OAuth errors, never a 500", async () => {
    expect((await token(node, {})).status).toBe(401)
    const { body: client } = await registerClient(node)
    expect((await token(node, { client_id: client.client_id, grant_type: "password" })).body.error).toBe(
      "unsupported_grant_type"
    )
    const json = await fetch(`${node.baseUrl}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{"
    })
    expect(json.status).toBe(400)
  })
})

describe("REST: a person's authorized clients", () => {
  it("lists them and revokes one, after which its tokens stop working", async () => {
    const { client, tokens } = await obtainTokens(node, admin.email)
    const list = await (await node.fetch("/v1/oauth/authorizations", { apiKey: admin.api_key })).json()
    const mine = list.items.find((a: { client_id: string }) => a.client_id === client.client_id)
    expect(mine).toMatchObject({ client_name: "Raw client", resource: `${node.baseUrl}/mcp/`, revoked_at: null })
    const revoked = await node.fetch(`/v1/oauth/authorizations/${mine.id}`, { method: "DELETE", apiKey: admin.api_key })
    expect(revoked.status).toBe(200)
    expect((await revoked.json()).revoked_at).not.toBeNull()
    expect((await ping(tokens.access_token)).status).toBe(401)
    const other = await node.bootstrap()
    const hidden = await node.fetch(`/v1/oauth/authorizations/${mine.id}`, { method: "DELETE", apiKey: other.api_key })
    expect(hidden.status).toBe(404)
    const bad = await node.fetch("/v1/oauth/authorizations/NOT-AN-ID", { method: "DELETE", apiKey: admin.api_key })
    expect(bad.status).toBe(400)
    expect((await bad.json()).error.code).toBe("validation_failed")
  })
})
