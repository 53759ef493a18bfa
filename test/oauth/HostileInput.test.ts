import * as Http from "node:http"
import * as Net from "node:net"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  authorizeUrl,
  Browser,
  hiddenField,
  pkce,
  REDIRECT_URI,
  registerClient,
  signedUpAdmin,
  signInAndConsent,
  token
} from "../mcp/support.js"
import { type LogLine, startTestNode, type TestNode } from "../support/TestNode.js"

const MAX_BODY = 64 * 1024
const logs: Array<LogLine> = []
let node: TestNode
let admin: Awaited<ReturnType<typeof signedUpAdmin>>
beforeAll(async () => {
  node = await startTestNode({
    // metadata documents on 127.0.0.1 are fetched (the egress guard lets them through), and many registrations
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    SWITCHYARD_MAX_BODY_BYTES: String(MAX_BODY),
    SWITCHYARD_RATE_LIMIT_REGISTRATION_IP: "0"
  }, { logs })
  admin = await signedUpAdmin(node)
})
afterAll(() => node?.stop())

/** RFC 6749 §5.2's error body, exactly: a string `error`, a description, nothing of the REST body. */
const expectOAuthError = async (response: Response, status: number, error: string) => {
  const text = await response.text()
  expect({ status: response.status, text }).toMatchObject({ status })
  const body = JSON.parse(text)
  expect(Object.keys(body).sort(), text).toEqual(["error", "error_description"])
  expect(body.error, text).toBe(error)
  expect(typeof body.error_description).toBe("string")
  expect(response.headers.get("location")).toBeNull()
  return body as { error: string; error_description: string }
}

const post = (path: string, body: string, type: string, headers: Record<string, string> = {}) =>
  fetch(`${node.baseUrl}${path}`, { method: "POST", headers: { "content-type": type, ...headers }, body })
const form = "application/x-www-form-urlencoded"

const registration = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    client_name: "Hostile",
    redirect_uris: [REDIRECT_URI],
    token_endpoint_auth_method: "none",
    ...extra
  })

describe("every refusal of the OAuth endpoints is in OAuth's error shape", () => {
  it("registration: NUL, JSON nested too deep, a body too large, not JSON", async () => {
    const nul = await expectOAuthError(
      await post("/oauth/register", registration({ client_name: "a\u0000b" }), "application/json"),
      400,
      "invalid_client_metadata"
    )
    expect(nul.error_description).toContain("NUL")
    const deep = await expectOAuthError(
      await post("/oauth/register", `${"[".repeat(70)}${"]".repeat(70)}`, "application/json"),
      400,
      "invalid_client_metadata"
    )
    expect(deep.error_description).toContain("64 levels")
    await expectOAuthError(
      await post("/oauth/register", registration({ client_name: "x".repeat(MAX_BODY) }), "application/json"),
      413,
      "invalid_client_metadata"
    )
    await expectOAuthError(await post("/oauth/register", "{", "application/json"), 400, "invalid_client_metadata")
  })

  it("NUL in the URL of each endpoint, authorize included (it cannot redirect without a client)", async () => {
    const { body: client } = await registerClient(node)
    const answers = [
      await post("/oauth/token?x=%00", new URLSearchParams({ client_id: client.client_id }).toString(), form),
      await post("/oauth/revoke?x=%00", new URLSearchParams({ token: "t" }).toString(), form),
      await fetch(`${node.baseUrl}/oauth/authorize?client_id=%00`, { redirect: "manual" }),
      await fetch(`${node.baseUrl}/.well-known/oauth-authorization-server?x=%00`),
      await fetch(`${node.baseUrl}/.well-known/oauth-protected-resource?x=%00`)
    ]
    for (const answer of answers) {
      const body = await expectOAuthError(answer, 400, "invalid_request")
      expect(body.error_description).toContain("NUL")
    }
    const registered = await post("/oauth/register?x=%00", registration(), "application/json")
    await expectOAuthError(registered, 400, "invalid_client_metadata")
  })

  it("NUL in a form body, a form too large, and a method the endpoint does not take", async () => {
    const nul = await post("/oauth/token", "grant_type=authorization_code&code=c&code_verifier=v&client_id=%00", form)
    expect((await expectOAuthError(nul, 400, "invalid_request")).error_description).toContain("NUL")
    const revoke = await post("/oauth/revoke", "token=a%00b&client_id=x", form)
    await expectOAuthError(revoke, 400, "invalid_request")
    const large = await post("/oauth/token", `grant_type=${"x".repeat(MAX_BODY)}`, form)
    await expectOAuthError(large, 413, "invalid_request")
    const get = await fetch(`${node.baseUrl}/oauth/token`)
    await expectOAuthError(get, 405, "invalid_request")
    expect(get.headers.get("allow")).toBe("POST")
  })

  it("NUL in the sign-in page's form, past its CSRF check: a page saying so, not a 500", async () => {
    const { body: client } = await registerClient(node)
    const browser = new Browser()
    const authorize = await browser.get(
      authorizeUrl(node, { client_id: client.client_id, challenge: pkce().challenge })
    )
    const loginUrl = authorize.headers.get("location")!
    const html = await (await browser.get(loginUrl)).text()
    const refused = await browser.post(new URL("/oauth_login", loginUrl).toString(), {
      request: hiddenField(html, "request"),
      csrf: hiddenField(html, "csrf"),
      action: "sign_in",
      email: "a\u0000b@example.com",
      password: "x"
    })
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain("NUL character")
  })
})

describe("a parameter sent twice is refused (RFC 6749 §3.1, §3.2)", () => {
  it("at the token endpoint, before the code is used: the honest exchange still works after", async () => {
    const { body: client } = await registerClient(node)
    const { challenge, verifier } = pkce()
    const { location } = await signInAndConsent(
      authorizeUrl(node, { client_id: client.client_id, challenge }),
      admin.email
    )
    const code = new URL(location).searchParams.get("code")!
    const honest = {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI
    }
    const twice = (name: string, value: string) => {
      const params = new URLSearchParams(honest)
      params.append(name, value)
      return post("/oauth/token", params.toString(), form)
    }
    const probe = new URLSearchParams(honest)
    probe.append("code", "garbage")
    probe.append("code_verifier", "zzz")
    probe.append("client_id", "other")
    await expectOAuthError(await post("/oauth/token", probe.toString(), form), 400, "invalid_request")
    for (const name of ["code", "code_verifier", "client_id", "grant_type", "redirect_uri"]) {
      const body = await expectOAuthError(await twice(name, "other"), 400, "invalid_request")
      expect(body.error_description).toContain(`\`${name}\``)
    }
    // the same value twice is still twice
    await expectOAuthError(await twice("code", code), 400, "invalid_request")
    const exchanged = await token(node, honest)
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200)

    const honestRefresh = {
      grant_type: "refresh_token",
      refresh_token: exchanged.body.refresh_token,
      client_id: client.client_id
    }
    const refresh = new URLSearchParams(honestRefresh)
    refresh.append("refresh_token", "sy_rt_other")
    await expectOAuthError(await post("/oauth/token", refresh.toString(), form), 400, "invalid_request")
    const revoke = new URLSearchParams({ token: exchanged.body.refresh_token, client_id: client.client_id })
    revoke.append("token", "sy_rt_other")
    await expectOAuthError(await post("/oauth/revoke", revoke.toString(), form), 400, "invalid_request")
    // neither refused request used the refresh token
    expect((await token(node, honestRefresh)).status).toBe(200)
  })

  it("a client id in HTTP Basic and another in the form", async () => {
    const { body: client } = await registerClient(node, { token_endpoint_auth_method: "client_secret_basic" })
    const basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString("base64")}`
    const other = new URLSearchParams({ grant_type: "refresh_token", refresh_token: "x", client_id: "someone-else" })
    await expectOAuthError(
      await post("/oauth/token", other.toString(), form, { authorization: basic }),
      400,
      "invalid_request"
    )
    const secretTwice = new URLSearchParams({ grant_type: "refresh_token", refresh_token: "x", client_secret: "y" })
    await expectOAuthError(
      await post("/oauth/token", secretTwice.toString(), form, { authorization: basic }),
      400,
      "invalid_request"
    )
    // the same id in both places is one client
    const same = new URLSearchParams({ grant_type: "refresh_token", refresh_token: "x", client_id: client.client_id })
    await expectOAuthError(
      await post("/oauth/token", same.toString(), form, { authorization: basic }),
      400,
      "invalid_grant"
    )
  })

  it("at the authorization endpoint: on the error page before the client is known, else sent back", async () => {
    const { body: client } = await registerClient(node)
    for (const name of ["client_id", "redirect_uri"]) {
      const url = new URL(authorizeUrl(node, { client_id: client.client_id, challenge: pkce().challenge }))
      url.searchParams.append(name, url.searchParams.get(name)!)
      const body = await expectOAuthError(await fetch(url, { redirect: "manual" }), 400, "invalid_request")
      expect(body.error_description).toContain(`\`${name}\``)
    }
    for (const name of ["code_challenge", "state", "response_type"]) {
      const url = new URL(authorizeUrl(node, { client_id: client.client_id, challenge: pkce().challenge }))
      url.searchParams.append(name, "again")
      const answer = await fetch(url, { redirect: "manual" })
      expect(answer.status).toBe(302)
      const back = new URL(answer.headers.get("location")!)
      expect(back.origin + back.pathname).toBe(REDIRECT_URI)
      expect(back.searchParams.get("error")).toBe("invalid_request")
    }
  })
})

describe("the authorization endpoint and an unknown client", () => {
  it("shows invalid_client and does not redirect", async () => {
    const answer = await fetch(authorizeUrl(node, { client_id: "sy_client_unknown", challenge: pkce().challenge }), {
      redirect: "manual"
    })
    await expectOAuthError(answer, 400, "invalid_client")
    const none = await fetch(`${node.baseUrl}/oauth/authorize?response_type=code`, { redirect: "manual" })
    await expectOAuthError(none, 400, "invalid_request")
  })
})

describe("registration takes JSON, http(s) addresses and a bounded list of redirect URIs", () => {
  it("refuses a JSON body sent as another type", async () => {
    for (const type of ["text/plain", form]) {
      const body = await expectOAuthError(
        await post("/oauth/register", registration(), type),
        415,
        "invalid_client_metadata"
      )
      expect(body.error_description).toContain("application/json")
    }
    const none = await fetch(`${node.baseUrl}/oauth/register`, { method: "POST", body: new Blob([registration()]) })
    await expectOAuthError(none, 415, "invalid_client_metadata")
  })

  it("takes client_uri only as an http(s) URL", async () => {
    for (const uri of ["javascript:alert(1)", "data:text/html,hi", "ftp://example.com/", "not a url"]) {
      const refused = await post("/oauth/register", registration({ client_uri: uri }), "application/json")
      const body = await expectOAuthError(refused, 400, "invalid_client_metadata")
      expect(body.error_description).toContain("client_uri")
    }
    const ok = await registerClient(node, { client_uri: "https://client.example.com/about" })
    expect(ok).toMatchObject({ status: 201, body: { client_uri: "https://client.example.com/about" } })
  })

  it("takes at most 20 redirect URIs", async () => {
    const uris = (n: number) => Array.from({ length: n }, (_, i) => `http://127.0.0.1:53682/cb${i}`)
    expect((await registerClient(node, { redirect_uris: uris(20) })).status).toBe(201)
    const refused = await post("/oauth/register", registration({ redirect_uris: uris(21) }), "application/json")
    expect((await expectOAuthError(refused, 400, "invalid_client_metadata")).error_description).toContain("20")
    const many = await post("/oauth/register", registration({ redirect_uris: uris(1000) }), "application/json")
    await expectOAuthError(many, 400, "invalid_client_metadata")
  })

  it("takes redirect URIs of at most 2,000 characters, and does not echo a longer one", async () => {
    const uri = (length: number) => `https://app.example/cb?${"a".repeat(length - 23)}`
    expect((await registerClient(node, { redirect_uris: [uri(2000)] })).status).toBe(201)
    const refused = await post("/oauth/register", registration({ redirect_uris: [uri(50_000)] }), "application/json")
    expect(await expectOAuthError(refused, 400, "invalid_redirect_uri")).toEqual({
      error: "invalid_redirect_uri",
      error_description: "A redirect URI is at most 2000 characters; one has 50000."
    })
  })
})

describe("a metadata document that cannot be fetched", () => {
  let server: Http.Server
  let port: number
  beforeAll(async () => {
    // plain HTTP where the client id says https: the TLS handshake fails
    server = Http.createServer((_req, res) => res.end("{}"))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    port = (server.address() as AddressInfo).port
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it("is answered with a generic message; the reason is logged, not sent", async () => {
    const clientId = `https://127.0.0.1:${port}/client.json`
    const authorize = await fetch(authorizeUrl(node, { client_id: clientId, challenge: pkce().challenge }), {
      redirect: "manual"
    })
    const shown = await expectOAuthError(authorize, 400, "invalid_client")
    expect(shown.error_description).toBe(`Could not fetch the client's metadata document (${clientId}).`)
    const exchange = await post(
      "/oauth/token",
      new URLSearchParams({ grant_type: "refresh_token", refresh_token: "x", client_id: clientId }).toString(),
      form
    )
    const refused = await expectOAuthError(exchange, 401, "invalid_client")
    expect(refused.error_description).toBe(shown.error_description)
    const logged = logs.find((l) => l.annotations["client_id"] === clientId)
    expect(String(logged?.annotations["reason"])).toMatch(/SSL|TLS|EPROTO/)
  })

  it("from a host that never answers, gives up after 5 s", async () => {
    // takes the connection and says nothing: the TLS handshake waits for ever
    const held: Array<Net.Socket> = []
    const silent = Net.createServer((socket) => void held.push(socket))
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    try {
      const clientId = `https://127.0.0.1:${(silent.address() as AddressInfo).port}/client.json`
      const authorize = await fetch(authorizeUrl(node, { client_id: clientId, challenge: pkce().challenge }), {
        redirect: "manual",
        signal: AbortSignal.timeout(15_000)
      })
      await expectOAuthError(authorize, 400, "invalid_client")
      const logged = logs.find((l) => l.annotations["client_id"] === clientId)
      expect(String(logged?.annotations["reason"])).toBe("no answer within 5 s")
    } finally {
      for (const socket of held) socket.destroy()
      await new Promise<void>((resolve) => silent.close(() => resolve()))
    }
  })
})
