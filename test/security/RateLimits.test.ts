import { Cause, Exit, Option } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, withDatabase } from "../access/support.js"
import { authorizeUrl, Browser, hiddenField, PASSWORD, pkce, REDIRECT_URI, signedUpAdmin } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

// small limits so the tests stay fast; each test comes from its own address (X-Forwarded-For, trusted here)
const LIMITS = {
  SWITCHYARD_TRUST_PROXY: "true",
  SWITCHYARD_RATE_LIMIT_API_KEY: "5",
  SWITCHYARD_RATE_LIMIT_API_KEY_IP: "12",
  SWITCHYARD_RATE_LIMIT_PASSWORD_ACCOUNT: "3",
  SWITCHYARD_RATE_LIMIT_PASSWORD_IP: "10",
  SWITCHYARD_RATE_LIMIT_REGISTRATION_IP: "4",
  SWITCHYARD_RATE_LIMIT_CLIENT_SECRET: "3"
}

let nodes: Array<TestNode> = []
beforeAll(async () => {
  const first = await startTestNode(LIMITS)
  // the second node shares the database and the public URL, as nodes behind one load balancer do
  const second = await startTestNode({
    ...LIMITS,
    DATABASE_URL: first.databaseUrl,
    SWITCHYARD_PUBLIC_URL: first.baseUrl
  })
  nodes = [first, second]
})
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
})

let addresses = 0
/** A source address no other test uses. */
const newAddress = () => `198.51.100.${++addresses}`

const getMe = (node: TestNode, apiKey: string, ip: string) =>
  node.fetch("/v1/me", { apiKey, headers: { "x-forwarded-for": ip } })

const wrongSecretOf = (apiKey: string) => apiKey.slice(0, 16) + Crypto.randomBytes(32).toString("base64url")
const unknownKey = () => `sy_${Crypto.randomBytes(6).toString("hex")}_${Crypto.randomBytes(32).toString("base64url")}`

const expectRateLimited = async (response: Response) => {
  const body = await response.json()
  expect(response.status, JSON.stringify(body)).toBe(429)
  expect(body.error.code).toBe("rate_limited")
  const retryAfter = Number(response.headers.get("retry-after"))
  expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true)
  expect(body.error.details.retry_after_seconds).toBe(retryAfter)
  expect(body.error.request_id).toBeTypeOf("string")
  return { body, retryAfter }
}

const expectStatus = async (response: Response, status: number) => {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  return text
}

const refusalsOf = async (node: TestNode, organizationId: string) =>
  (await auditEvents(node, organizationId)).filter((e) =>
    e.action === "AUTHENTICATION_FAILED" || e.action === "RATE_LIMITED"
  )

describe("wrong API key secrets", () => {
  it("answer 429 with Retry-After past the key id's limit on every node, and are audited once per window", async () => {
    const org = await nodes[0]!.bootstrap()
    const other = await nodes[1]!.bootstrap()
    const forged = wrongSecretOf(org.api_key)
    const ip = newAddress()
    // five refusals, alternating nodes: each a 401
    for (let i = 0; i < 5; i++) {
      const body = JSON.parse(await expectStatus(await getMe(nodes[i % 2]!, forged, ip), 401))
      expect(body.error.code).toBe("invalid_api_key")
    }
    // the sixth, on either node, is over the limit the nodes share
    const { body } = await expectRateLimited(await getMe(nodes[1]!, forged, ip))
    expect(body.error.message).toContain(org.api_key.slice(0, 16))
    expect(body.error.message).toMatch(/Try again in (\d+ seconds?|1 minute)/)
    // a flood from anywhere: every one 429, on both nodes
    const flood = await Promise.all(
      Array.from({ length: 60 }, (_, i) => getMe(nodes[i % 2]!, forged, i % 3 === 0 ? newAddress() : ip))
    )
    for (const response of flood) await expectRateLimited(response)

    // the key's owner and everyone else carry on, from the same address
    for (const node of nodes) {
      await expectStatus(await getMe(node, org.api_key, ip), 200)
      await expectStatus(await getMe(node, other.api_key, ip), 200)
    }
    // 66 refusals, two records: the window's first refusal and its first rate-limited attempt
    const records = await refusalsOf(nodes[0]!, org.organization_id)
    expect(records.map((r) => r.action)).toEqual(["AUTHENTICATION_FAILED", "RATE_LIMITED"])
    expect(records[1]).toMatchObject({
      outcome: "denied",
      actor_type: "api_key",
      actor_id: org.api_key.slice(3, 15),
      ip,
      details: { code: "rate_limited", limit: "api_key", max: 5, window_seconds: 60 }
    })
  })

  it("answer 429 past the source address's limit, for unknown key ids too", async () => {
    const org = await nodes[0]!.bootstrap()
    const ip = newAddress()
    for (let i = 0; i < 12; i++) await expectStatus(await getMe(nodes[i % 2]!, unknownKey(), ip), 401)
    const { body } = await expectRateLimited(await getMe(nodes[0]!, unknownKey(), ip))
    expect(body.error.message).toContain("from your address")
    await expectRateLimited(await getMe(nodes[1]!, wrongSecretOf(org.api_key), ip))
    // a correct key from that address still works; other addresses are not limited
    await expectStatus(await getMe(nodes[1]!, org.api_key, ip), 200)
    await expectStatus(await getMe(nodes[1]!, unknownKey(), newAddress()), 401)
  })

  it("leave a correct key's requests to the cache: they count nothing in the database", async () => {
    const org = await nodes[0]!.bootstrap()
    const ip = newAddress()
    for (let i = 0; i < 20; i++) await expectStatus(await getMe(nodes[i % 2]!, org.api_key, ip), 200)
    const rows = await withDatabase(
      nodes[0]!,
      async (db) =>
        (await db.query("SELECT key FROM rate_limit_buckets WHERE key = ANY($1)", [[
          `api_key:${org.api_key.slice(3, 15)}`,
          `api_key_ip:${ip}`
        ]])).rows
    )
    expect(rows).toEqual([])
  })

  it("reach the typed client as TooManyRequests, apart from Unauthenticated", async () => {
    const org = await nodes[0]!.bootstrap()
    const forged = wrongSecretOf(org.api_key)
    const tags = []
    for (let i = 0; i < 7; i++) {
      const exit = await nodes[i % 2]!.api(forged, (client) => client.identity.me())
      tags.push(Exit.isFailure(exit) ? Cause.failureOption(exit.cause).pipe(Option.map((e) => e._tag)) : Option.none())
    }
    expect(tags.map(Option.getOrUndefined)).toEqual([
      ...Array(5).fill("Unauthenticated"),
      "TooManyRequests",
      "TooManyRequests"
    ])
  })

  it("are documented: the API's description lists 429 rate_limited for authenticated operations", async () => {
    const spec = await (await nodes[0]!.fetch("/openapi.json")).json()
    expect(spec.paths["/v1/me"].get.responses["429"]).toBeDefined()
  })
})

/** A sign-in form of a real authorization request, as a browser holds it. */
const signInForm = async (clientId: string) => {
  const browser = new Browser()
  const authorize = await browser.get(authorizeUrl(nodes[0]!, { client_id: clientId, challenge: pkce().challenge }))
  expect(authorize.status).toBe(302)
  const html = await (await browser.get(authorize.headers.get("location")!)).text()
  const signIn = (node: TestNode, email: string, password: string, ip: string) =>
    browser.post(`${node.baseUrl}/oauth_login`, {
      request: hiddenField(html, "request"),
      csrf: hiddenField(html, "csrf"),
      action: "sign_in",
      email,
      password
    }, { "x-forwarded-for": ip })
  return signIn
}

const register = (node: TestNode, ip: string) =>
  fetch(`${node.baseUrl}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": ip },
    body: JSON.stringify({ client_name: "Rate", redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" })
  })

describe("password sign-in", () => {
  let clientId = ""
  beforeAll(async () => {
    clientId = (await (await register(nodes[0]!, newAddress())).json()).client_id
  })

  it("locks an account after its limit on every node, even for the right password, and audits the lock once", async () => {
    const admin = await signedUpAdmin(nodes[0]!)
    const other = await signedUpAdmin(nodes[1]!)
    const ip = newAddress()
    const signIn = await signInForm(clientId)
    for (let i = 0; i < 3; i++) {
      const html = await expectStatus(await signIn(nodes[i % 2]!, admin.email, "wrong password", ip), 401)
      expect(html).toContain("Wrong e-mail or password.")
    }
    for (let i = 0; i < 8; i++) {
      // the right password too: a lock that let it through would let guessing go on
      const response = await signIn(nodes[i % 2]!, admin.email, i === 0 ? PASSWORD : "wrong password", ip)
      const html = await expectStatus(response, 429)
      expect(html).toContain("Too many sign-in attempts for this e-mail address.")
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(60)
      expect(Number(response.headers.get("retry-after"))).toBeLessThanOrEqual(900)
    }
    // the same address signs another person in (and a correct sign-in does not count against it)
    expect((await (await signInForm(clientId))(nodes[1]!, other.email, PASSWORD, ip)).status).toBe(303)
    const records = (await auditEvents(nodes[0]!, admin.organization_id)).filter((e) => e.action === "RATE_LIMITED")
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({
      outcome: "denied",
      actor_type: "user",
      actor_id: admin.user_id,
      ip,
      details: { code: "rate_limited", limit: "password_account", max: 3, window_seconds: 900 }
    })
  })

  it("locks the console's sign-in with the same count, and audits that lock too", async () => {
    const admin = await signedUpAdmin(nodes[0]!)
    const ip = newAddress()
    const consoleSignIn = (node: TestNode, password: string) =>
      fetch(`${node.baseUrl}/console/api/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": ip },
        body: JSON.stringify({ email: admin.email, password })
      })
    for (let i = 0; i < 3; i++) expect((await consoleSignIn(nodes[i % 2]!, "wrong password")).status).toBe(401)
    for (let i = 0; i < 3; i++) {
      const response = await consoleSignIn(nodes[i % 2]!, PASSWORD)
      expect(response.status).toBe(429)
      expect((await response.json()).error.code).toBe("rate_limited")
    }
    const records = (await auditEvents(nodes[0]!, admin.organization_id)).filter((e) => e.action === "RATE_LIMITED")
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({
      outcome: "denied",
      actor_id: admin.user_id,
      ip,
      details: { code: "rate_limited", limit: "password_account" }
    })
  })

  it("counts an unknown e-mail like a known one, and a correct sign-in starts the account afresh", async () => {
    const admin = await signedUpAdmin(nodes[0]!)
    const ip = newAddress()
    const signIn = await signInForm(clientId)
    const unknown = `nobody-${Date.now()}@example.com`
    for (let i = 0; i < 3; i++) await expectStatus(await signIn(nodes[i % 2]!, unknown, "guess", ip), 401)
    expect(await expectStatus(await signIn(nodes[0]!, unknown, "guess", ip), 429)).toContain(
      "Too many sign-in attempts"
    )
    // two failures, then the right password: the account's count starts again
    for (let i = 0; i < 2; i++) await expectStatus(await signIn(nodes[i % 2]!, admin.email, "wrong", ip), 401)
    expect((await signIn(nodes[0]!, admin.email, PASSWORD, ip)).status).toBe(303)
    const again = await signInForm(clientId)
    for (let i = 0; i < 3; i++) await expectStatus(await again(nodes[i % 2]!, admin.email, "wrong", ip), 401)
  })

  it("refuses an address after its limit of failed sign-ins over many accounts", async () => {
    const admin = await signedUpAdmin(nodes[0]!)
    const ip = newAddress()
    const signIn = await signInForm(clientId)
    // a password spray: one guess per account, ten accounts
    for (let i = 0; i < 10; i++) {
      await expectStatus(await signIn(nodes[i % 2]!, `spray-${i}-${Date.now()}@example.com`, "Summer2026!", ip), 401)
    }
    const response = await signIn(nodes[1]!, admin.email, PASSWORD, ip)
    expect(await expectStatus(response, 429)).toContain("Too many failed sign-ins from your address.")
    expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0)
    // from elsewhere the account signs in
    expect((await (await signInForm(clientId))(nodes[1]!, admin.email, PASSWORD, newAddress())).status).toBe(303)
  })
})

describe("dynamic client registration", () => {
  it("answers 429 in OAuth's error form with Retry-After past the address's limit, across nodes", async () => {
    const ip = newAddress()
    for (let i = 0; i < 4; i++) await expectStatus(await register(nodes[i % 2]!, ip), 201)
    for (const node of nodes) {
      const response = await register(node, ip)
      const body = await response.json()
      expect(response.status, JSON.stringify(body)).toBe(429)
      expect(body.error).toBe("rate_limited")
      expect(body.error_description).toContain("Too many client registrations from your address")
      const retryAfter = Number(response.headers.get("retry-after"))
      expect(retryAfter).toBeGreaterThan(3000)
      expect(retryAfter).toBeLessThanOrEqual(3600)
    }
    // another address registers
    await expectStatus(await register(nodes[1]!, newAddress()), 201)
  })
})

describe("confidential OAuth clients", () => {
  it("answer 429 past the client's limit of wrong secrets on every node, while the right secret still works", async () => {
    const created = await (await fetch(`${nodes[0]!.baseUrl}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": newAddress() },
      body: JSON.stringify({
        client_name: "Confidential",
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: "client_secret_post"
      })
    })).json()
    const revoke = (node: TestNode, secret: string) =>
      fetch(`${node.baseUrl}/oauth/revoke`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": newAddress() },
        body: new URLSearchParams({ client_id: created.client_id, client_secret: secret, token: "nothing" })
      })
    for (let i = 0; i < 3; i++) await expectStatus(await revoke(nodes[i % 2]!, "wrong"), 401)
    for (const node of nodes) {
      const response = await revoke(node, "wrong")
      const body = await response.json()
      expect(response.status, JSON.stringify(body)).toBe(429)
      expect(body.error).toBe("rate_limited")
      expect(body.error_description).toContain(created.client_id)
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    }
    // the client's own secret is not locked out by someone else's guesses
    await expectStatus(await revoke(nodes[1]!, created.client_secret), 200)
  })
})

describe("a window that ends", () => {
  let node: TestNode
  beforeAll(async () => {
    node = await startTestNode({
      SWITCHYARD_TRUST_PROXY: "true",
      SWITCHYARD_RATE_LIMIT_API_KEY: "2",
      SWITCHYARD_RATE_LIMIT_API_KEY_WINDOW: "2 seconds"
    })
  })
  afterAll(() => node?.stop())

  it("lets a limited key id be refused with 401 again, and records the new window's first refusal", async () => {
    const org = await node.bootstrap()
    const forged = wrongSecretOf(org.api_key)
    const ip = newAddress()
    for (let i = 0; i < 2; i++) await expectStatus(await getMe(node, forged, ip), 401)
    const { retryAfter } = await expectRateLimited(await getMe(node, forged, ip))
    expect(retryAfter).toBeLessThanOrEqual(2)
    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 + 100))
    await expectStatus(await getMe(node, forged, ip), 401)
    const records = await refusalsOf(node, org.organization_id)
    expect(records.map((r) => r.action)).toEqual(["AUTHENTICATION_FAILED", "RATE_LIMITED", "AUTHENTICATION_FAILED"])
  })
})
