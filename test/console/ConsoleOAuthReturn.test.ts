import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { consoleReturnPath } from "../../src/connectors/ConnectionOAuthRoutes.js"
import { call } from "../access/support.js"
import { type OAuthServer, startOAuthServer } from "../support/OAuthServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { oauthSpec } from "./support.js"

let node: TestNode
let provider: OAuthServer
let apiKey: string
let connectorId: string
const client = { id: "return-test", secret: "return-secret" }

beforeAll(async () => {
  provider = await startOAuthServer(client)
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
  apiKey = (await node.bootstrap("OAuth Return Org")).api_key
  const connector = await call(node, apiKey, "POST", "/v1/tools/connectors", {
    spec: oauthSpec("Return API", provider)
  })
  expect(connector.status).toBe(201)
  connectorId = connector.body.id
}, 60_000)
afterAll(async () => {
  await node?.stop()
  await provider?.close()
})

/** A new OAuth2 connection's consent link (`/oauth/connections/start?state=…`). */
const consentLink = async () => {
  const created = await call(node, apiKey, "POST", `/v1/tools/connectors/${connectorId}/connections`, {
    name: `c${Math.random().toString(36).slice(2, 8)}`,
    credentials: { type: "oauth2", client_id: client.id, client_secret: client.secret }
  })
  expect(created.status).toBe(201)
  return new URL(created.body.connector_page_url as string)
}

/** The browser's way through start → provider (approves at once) → callback, with the cookie it kept. */
const consent = async (start: URL, cookieFrom?: string) => {
  const started = await fetch(start, { redirect: "manual" })
  expect(started.status).toBe(302)
  const cookies = started.headers.getSetCookie()
  const cookie = cookieFrom ?? cookies.map((c) => c.split(";")[0]).join("; ")
  const approved = await fetch(started.headers.get("location")!, { redirect: "manual" })
  expect(approved.status).toBe(302)
  const callback = await fetch(approved.headers.get("location")!, {
    redirect: "manual",
    headers: cookie === "" ? {} : { cookie }
  })
  return { cookies, cookie, callback }
}

describe("OAuth2 connect from the console: return_to", () => {
  it("comes back to the console's connector page after the consent (a Lax cookie bound to the sign-in)", async () => {
    const start = await consentLink()
    start.searchParams.set("return_to", `/console/connectors/${connectorId}`)
    const { callback, cookies } = await consent(start)
    expect(cookies).toHaveLength(1)
    expect(cookies[0]).toMatch(/^sy_oauth_return=/) // __Host-sy_oauth_return on an https node
    expect(cookies[0]).toMatch(/HttpOnly/i)
    expect(cookies[0]).toMatch(/SameSite=Lax/i)
    expect(callback.status).toBe(303)
    expect(callback.headers.get("location")).toBe(`/console/connectors/${connectorId}?oauth=connected`)
    expect(callback.headers.getSetCookie()[0]).toMatch(/^sy_oauth_return=;.*Max-Age=0/i)
    const connections = await call(node, apiKey, "GET", `/v1/tools/connectors/${connectorId}`)
    expect(connections.body.connections.filter((c: any) => c.status === "active").length).toBeGreaterThan(0)
  })

  it("never redirects outside the console: an outside or escaping return_to is ignored (the node's own page)", async () => {
    for (
      const outside of [
        "https://evil.example/console",
        "//evil.example/console",
        "/\\evil.example/console",
        "/console/../oauth_login",
        "/consolex",
        "javascript:alert(1)",
        "/console\n/x"
      ]
    ) {
      const start = await consentLink()
      start.searchParams.set("return_to", outside)
      const { callback, cookies } = await consent(start)
      expect(cookies, outside).toEqual([])
      expect(callback.status, outside).toBe(200)
      expect(callback.headers.get("location"), outside).toBeNull()
      expect(await callback.text()).toContain("is ready")
    }
  })

  it("a return cookie counts only for the sign-in it was set with", async () => {
    const first = await consentLink()
    first.searchParams.set("return_to", `/console/connectors/${connectorId}`)
    const started = await fetch(first, { redirect: "manual" })
    const kept = started.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ")
    expect(kept).toMatch(/^sy_oauth_return=/)
    // another sign-in completes while the first one's cookie is in the browser
    const { callback } = await consent(await consentLink(), kept)
    expect(callback.status).toBe(200)
    expect(callback.headers.get("location")).toBeNull()
  })

  it("accepts only paths under /console (pure check)", () => {
    expect(consoleReturnPath("/console")).toBe("/console")
    expect(consoleReturnPath("/console/connectors/abc?tab=1")).toBe("/console/connectors/abc?tab=1")
    for (const bad of ["", "console/x", "https://evil.example/console/x", "//evil/console", "/console/../x", "/x"]) {
      expect(consoleReturnPath(bad), bad).toBeUndefined()
    }
    expect(consoleReturnPath(null)).toBeUndefined()
  })
})
