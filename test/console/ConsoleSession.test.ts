import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PASSWORD, signedUpAdmin } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { ensureConsoleBuilt } from "./support.js"

let node: TestNode
let admin: Awaited<ReturnType<typeof signedUpAdmin>>
beforeAll(async () => {
  ensureConsoleBuilt()
  node = await startTestNode()
  admin = await signedUpAdmin(node)
})
afterAll(() => node?.stop())

/** Signs in as the console does; the session cookie and the CSRF token it answers with. */
const signIn = async (email = admin.email, password = PASSWORD) => {
  const response = await fetch(`${node.baseUrl}/console/api/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: node.baseUrl },
    body: JSON.stringify({ email, password })
  })
  const cookie = response.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ")
  return { response, cookie, body: await response.json() }
}

describe("the console at /console", () => {
  it("serves the built app: index.html no-cache with a CSP, hashed assets cached for a year and gzipped", async () => {
    for (const path of ["/console", "/console/", "/console/agents/123", "/console/settings/api-keys"]) {
      const page = await fetch(`${node.baseUrl}${path}`)
      expect(page.status, path).toBe(200)
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(page.headers.get("cache-control")).toBe("no-cache")
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
      expect(page.headers.get("x-content-type-options")).toBe("nosniff")
      const html = await page.text()
      expect(html).toContain("<div id=\"root\"></div>")
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/) // no inline script: the CSP would block it
    }
    const html = await (await fetch(`${node.baseUrl}/console/`)).text()
    const script = /src="(\/console\/assets\/index-[^"]+\.js)"/.exec(html)![1]!
    const asset = await fetch(`${node.baseUrl}${script}`, { headers: { "accept-encoding": "gzip" } })
    expect(asset.status).toBe(200)
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
    expect(asset.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
    expect(asset.headers.get("content-encoding")).toBe("gzip")
    expect((await fetch(`${node.baseUrl}/console/assets/nothing-here.js`)).status).toBe(404)
  })

  it("its API answers a wrong method with 405 and Allow, an unknown path with route_not_found", async () => {
    const get = await fetch(`${node.baseUrl}/console/api/sign-in`)
    expect(get.status).toBe(405)
    expect(get.headers.get("allow")).toBe("POST")
    expect((await get.json()).error.code).toBe("method_not_allowed")
    const unknown = await fetch(`${node.baseUrl}/console/api/nope`)
    expect(unknown.status).toBe(404)
    expect((await unknown.json()).error.code).toBe("route_not_found")
  })

  it("signs in with the password, refuses a wrong one with the API's error shape, and tells who is signed in", async () => {
    const wrong = await signIn(admin.email, "not the password")
    expect(wrong.response.status).toBe(401)
    expect(wrong.body.error).toMatchObject({ code: "invalid_credentials", message: "Wrong e-mail or password." })
    expect(wrong.cookie).toBe("")

    const { body, cookie, response } = await signIn()
    expect(response.status).toBe(200)
    const setCookie = response.headers.getSetCookie()[0]!
    expect(setCookie).toMatch(/^sy_console=/) // __Host-sy_console on an https node
    expect(setCookie).toMatch(/HttpOnly/i)
    expect(setCookie).toMatch(/SameSite=Strict/i)
    expect(body).toMatchObject({
      user: { email: admin.email },
      organization: { id: admin.organization_id },
      role: "super_admin"
    })
    expect(body.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const session = await (await fetch(`${node.baseUrl}/console/api/session`, { headers: { cookie } })).json()
    expect(session.csrf_token).toBe(body.csrf_token)
    const none = await fetch(`${node.baseUrl}/console/api/session`)
    expect(none.status).toBe(401)
    expect((await none.json()).error.code).toBe("invalid_session")
  })

  it("records each password sign-in to an account, good or bad, in its organization's audit log", async () => {
    const recorded = async () =>
      (await (await node.fetch("/v1/audit-logs?action=PASSWORD_SIGN_IN", { apiKey: admin.api_key })).json()).items
        .filter((e: any) => e.action === "PASSWORD_SIGN_IN")
    const before = new Set((await recorded()).map((e: any) => e.id))
    expect((await signIn(admin.email, "not the password")).response.status).toBe(401)
    expect((await signIn()).response.status).toBe(200)
    // an e-mail no account has belongs to no organization: nothing to record
    expect((await signIn("nobody@example.test", "whatever")).response.status).toBe(401)
    const added = (await recorded()).filter((e: any) => !before.has(e.id))
    expect(added).toHaveLength(2)
    expect(added.find((e: any) => e.outcome === "denied")).toMatchObject({
      details: { via: "console", reason: "wrong_password" }
    })
    expect(added.find((e: any) => e.outcome === "success")).toMatchObject({ details: { via: "console" } })
  })

  it("the REST API takes the session cookie with the user's role; a changing call needs the CSRF token", async () => {
    const { body, cookie } = await signIn()
    const agents = await fetch(`${node.baseUrl}/v1/agents`, { headers: { cookie } })
    expect(agents.status).toBe(200)

    const create = (headers: Record<string, string>) =>
      fetch(`${node.baseUrl}/v1/agents`, {
        method: "POST",
        headers: { cookie, "content-type": "application/json", ...headers },
        body: JSON.stringify({ name: "From the console", model: { provider: "scripted", script: [{ text: "hi" }] } })
      })
    const withoutToken = await create({})
    expect(withoutToken.status).toBe(401)
    expect((await withoutToken.json()).error.code).toBe("csrf_token_invalid")
    const wrongToken = await create({ "x-csrf-token": "x".repeat(43) })
    expect(wrongToken.status).toBe(401)
    const otherSite = await create({ "x-csrf-token": body.csrf_token, origin: "http://evil.example" })
    expect(otherSite.status).toBe(401)
    expect((await otherSite.json()).error.code).toBe("csrf_token_invalid")
    const created = await create({ "x-csrf-token": body.csrf_token, origin: node.baseUrl })
    expect(created.status).toBe(201)

    // the audit log names the user, as for their personal key
    const audit = await (await fetch(`${node.baseUrl}/v1/audit-logs?event_type=CREATE_AGENT`, { headers: { cookie } }))
      .json()
    expect(audit.items[0]?.actor).toMatchObject({ type: "user", id: admin.user_id })

    // an ended session is refused, not taken for "no credentials"
    const out = await fetch(`${node.baseUrl}/console/api/sign-out`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", "x-csrf-token": body.csrf_token },
      body: "{}"
    })
    expect(out.status).toBe(200)
    const after = await fetch(`${node.baseUrl}/v1/agents`, { headers: { cookie } })
    expect(after.status).toBe(401)
    expect((await after.json()).error.code).toBe("invalid_session")
  })

  it("GET /v1/me answers the signed-in user for a console session, and an API key's caller as before", async () => {
    const { cookie } = await signIn()
    const me = await fetch(`${node.baseUrl}/v1/me`, { headers: { cookie } })
    expect(me.status).toBe(200)
    const body = await me.json()
    expect(body).toMatchObject({
      organization: { id: admin.organization_id },
      user: { id: admin.user_id, email: admin.email },
      role: "super_admin",
      role_display: "Super admin",
      key: { kind: "personal", name: "Console session", role: "super_admin", user_id: admin.user_id, revoked_at: null }
    })
    // the session's stable key id: the one its tasks and audit records carry
    expect(body.key.id).toMatch(/^[a-z0-9]{12}$/)
    const again = await (await fetch(`${node.baseUrl}/v1/me`, { headers: { cookie } })).json()
    expect(again.key.id).toBe(body.key.id)

    const byKey = await (await fetch(`${node.baseUrl}/v1/me`, { headers: { "x-api-key": admin.api_key } })).json()
    expect(byKey.key.name).not.toBe("Console session")
    expect(byKey.key.prefix).toMatch(/^sy_[a-z0-9]{12}_$/)
    expect(byKey.key.id).not.toBe(body.key.id)
    expect(byKey.user.email).toBe(admin.email)
  })

  it("sign-in takes JSON from this origin only (a cross-site form cannot sign someone in)", async () => {
    const form = await fetch(`${node.baseUrl}/console/api/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ email: admin.email, password: PASSWORD }).toString()
    })
    expect(form.status).toBe(400)
    const foreign = await fetch(`${node.baseUrl}/console/api/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://evil.example" },
      body: JSON.stringify({ email: admin.email, password: PASSWORD })
    })
    expect(foreign.status).toBe(400)
    expect(foreign.headers.getSetCookie()).toEqual([])
  })
})
