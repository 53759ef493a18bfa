import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens
} from "@modelcontextprotocol/sdk/shared/auth.js"
import * as Crypto from "node:crypto"
import pg from "pg"
import { hashPassword } from "../../src/oauth/Passwords.js"
import type { TestNode } from "../support/TestNode.js"

export const PASSWORD = "correct horse battery staple"

/** A bootstrapped organization whose Super admin can sign in with PASSWORD. */
export const signedUpAdmin = async (node: TestNode, organization?: string) => {
  const created = await node.bootstrap(organization)
  const me = await (await node.fetch("/v1/me", { apiKey: created.api_key })).json()
  await setPassword(node, me.user.email, PASSWORD)
  return { ...created, email: me.user.email as string }
}

export const setPassword = async (node: TestNode, email: string, password: string) => {
  const client = new pg.Client({ connectionString: node.databaseUrl })
  await client.connect()
  try {
    await client.query(
      `INSERT INTO user_passwords (user_id, hash) SELECT id, $2 FROM users WHERE lower(email) = lower($1)
       ON CONFLICT (user_id) DO UPDATE SET hash = excluded.hash`,
      [email, await hashPassword(password)]
    )
  } finally {
    await client.end()
  }
}

/** A cookie jar and form helpers: a browser, minus the rendering. */
export class Browser {
  readonly cookies = new Map<string, string>()

  async get(url: string, init: RequestInit = {}) {
    return this.send(url, { ...init, method: "GET" })
  }

  async post(url: string, form: Record<string, string>, headers: Record<string, string> = {}) {
    return this.send(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(form).toString()
    })
  }

  async postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
    return this.send(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body)
    })
  }

  private async send(url: string, init: RequestInit) {
    const headers = new Headers(init.headers)
    if (this.cookies.size > 0) {
      headers.set("cookie", Array.from(this.cookies, ([k, v]) => `${k}=${v}`).join("; "))
    }
    // a node without SWITCHYARD_PUBLIC_URL names itself localhost, which fetch may resolve to ::1 while the
    // node listens on 127.0.0.1
    const target = url.replace(/^http:\/\/localhost:/, "http://127.0.0.1:")
    const response = await fetch(target, { ...init, headers, redirect: "manual" })
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";")
      const eq = pair!.indexOf("=")
      const name = pair!.slice(0, eq)
      const value = pair!.slice(eq + 1)
      if (value === "" || /max-age=0/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    return response
  }
}

export const hiddenField = (html: string, name: string) => {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html)
  if (match === null) throw new Error(`no field ${name} in page:\n${html}`)
  return match[1]!.replace(/&#(\d+);/g, (_, c) => String.fromCharCode(Number(c)))
}

/**
 * What a person does in a browser after the client opens `/oauth/authorize`: follow it to the sign-in
 * page, sign in, and approve (or deny) on the consent page. Returns the final redirect to the client.
 */
export const signInAndConsent = async (
  authorizationUrl: string,
  email: string,
  options: { password?: string; decision?: "approve" | "deny"; browser?: Browser } = {}
) => {
  const browser = options.browser ?? new Browser()
  const authorize = await browser.get(authorizationUrl)
  if (authorize.status !== 302) throw new Error(`authorize: ${authorize.status} ${await authorize.text()}`)
  const loginUrl = authorize.headers.get("location")!
  const signIn = await browser.get(loginUrl)
  const signInHtml = await signIn.text()
  if (signIn.status !== 200) throw new Error(`sign-in page: ${signIn.status} ${signInHtml}`)
  const posted = await browser.post(new URL("/oauth_login", loginUrl).toString(), {
    request: hiddenField(signInHtml, "request"),
    csrf: hiddenField(signInHtml, "csrf"),
    action: "sign_in",
    email,
    password: options.password ?? PASSWORD
  })
  if (posted.status !== 303) throw new Error(`sign in: ${posted.status} ${await posted.text()}`)
  const consent = await browser.get(new URL(posted.headers.get("location")!, loginUrl).toString())
  const consentHtml = await consent.text()
  const decided = await browser.post(new URL("/oauth_login", loginUrl).toString(), {
    request: hiddenField(consentHtml, "request"),
    csrf: hiddenField(consentHtml, "csrf"),
    organization_id: hiddenField(consentHtml, "organization_id"),
    action: options.decision ?? "approve"
  })
  if (decided.status !== 303) throw new Error(`consent: ${decided.status} ${await decided.text()}`)
  return { location: decided.headers.get("location")!, consentHtml, browser }
}

export const REDIRECT_URI = "http://127.0.0.1:53682/callback"

/** The SDK's client-side OAuth hooks, kept in memory; the "browser redirect" is recorded for the test. */
export class TestOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier = ""
  authorizationUrl: URL | undefined
  readonly redirectUrl: string
  readonly clientMetadata: OAuthClientMetadata

  constructor(redirectUrl = REDIRECT_URI, metadata: Partial<OAuthClientMetadata> = {}) {
    this.redirectUrl = redirectUrl
    this.clientMetadata = {
      client_name: "Test MCP client",
      redirect_uris: [redirectUrl],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      ...metadata
    }
  }
  state() {
    return Crypto.randomBytes(8).toString("hex")
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
}

export const pkce = () => {
  const verifier = Crypto.randomBytes(32).toString("base64url")
  return { verifier, challenge: Crypto.createHash("sha256").update(verifier).digest("base64url") }
}

export const registerClient = async (node: TestNode, body: Record<string, unknown> = {}) => {
  const response = await fetch(`${node.baseUrl}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "Raw client",
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
      ...body
    })
  })
  return { status: response.status, body: await response.json() }
}

export const authorizeUrl = (
  node: TestNode,
  params: { client_id: string; challenge?: string | undefined } & Record<string, string | undefined>
) => {
  const url = new URL(`${node.baseUrl}/oauth/authorize`)
  const { challenge, ...rest } = params
  const all: Record<string, string | undefined> = {
    response_type: "code",
    redirect_uri: REDIRECT_URI,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "st-123",
    resource: `${node.baseUrl}/mcp/`,
    ...rest
  }
  for (const [k, v] of Object.entries(all)) if (v !== undefined) url.searchParams.set(k, v)
  return url.toString()
}

export const token = async (node: TestNode, form: Record<string, string>, headers: Record<string, string> = {}) => {
  const response = await fetch(`${node.baseUrl}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(form).toString()
  })
  return { status: response.status, headers: response.headers, body: await response.json() }
}

/** The whole flow over plain HTTP: a registered public client and its first tokens. */
export const obtainTokens = async (
  node: TestNode,
  email: string,
  options: { scope?: string; resource?: string; password?: string } = {}
) => {
  const client = (await registerClient(node)).body
  const { challenge, verifier } = pkce()
  const { location } = await signInAndConsent(
    authorizeUrl(node, {
      client_id: client.client_id,
      challenge,
      scope: options.scope,
      resource: options.resource ?? `${node.baseUrl}/mcp/`
    }),
    email,
    options.password === undefined ? {} : { password: options.password }
  )
  const code = new URL(location).searchParams.get("code")!
  const exchanged = await token(node, {
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    client_id: client.client_id,
    redirect_uri: REDIRECT_URI
  })
  if (exchanged.status !== 200) throw new Error(`token: ${JSON.stringify(exchanged.body)}`)
  return { client, code, verifier, tokens: exchanged.body as { access_token: string; refresh_token: string } }
}

/** A raw JSON-RPC POST to an MCP endpoint. */
export const mcpPost = (
  baseUrl: string,
  body: unknown,
  headers: Record<string, string> = {},
  path = "/mcp/"
) =>
  fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers
    },
    body: JSON.stringify(body)
  })

export const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "raw", version: "1" }
  }
}

/** Opens a session with a token; returns its id. */
export const openSession = async (baseUrl: string, accessToken: string, path = "/mcp/") => {
  const response = await mcpPost(baseUrl, initialize, { authorization: `Bearer ${accessToken}` }, path)
  if (response.status !== 200) throw new Error(`initialize: ${response.status} ${await response.text()}`)
  return response.headers.get("mcp-session-id")!
}

/**
 * An MCP client of the SDK signed in as `email`, the way a third-party client does it: its first connect is
 * refused (401), the person signs in and consents, the client finishes the OAuth flow and connects again.
 */
export const connectSdkClient = async (node: TestNode, email: string, name = "switchyard-test") => {
  const url = new URL(`${node.baseUrl}/mcp/`)
  const provider = new TestOAuthProvider()
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider })
  const refused = await new Client({ name, version: "1" }).connect(first).then(() => undefined, (e: Error) => e)
  if (!/Unauthorized/.test(String(refused))) throw new Error(`the first connect was not refused: ${refused}`)
  const { location } = await signInAndConsent(provider.authorizationUrl!.toString(), email)
  await first.finishAuth(new URL(location).searchParams.get("code")!)
  const client = new Client({ name, version: "1" })
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }))
  return client
}
