import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call } from "../access/support.js"
import { Browser } from "../mcp/support.js"
import { CALLBACK_PATH, putSso, ssoNode } from "../sso/support.js"
import { startOidcProvider, type TestIdp } from "../support/OidcProvider.js"
import type { TestNode } from "../support/TestNode.js"

let node: TestNode
let idp: TestIdp
beforeAll(async () => {
  node = await ssoNode()
  idp = await startOidcProvider({ redirectUris: [`${node.baseUrl}${CALLBACK_PATH}`] })
})
afterAll(async () => {
  await idp?.stop()
  await node?.stop()
})

/** Through the provider: its login form as `account`, then its redirects, up to our callback's answer. */
const throughProvider = async (browser: Browser, start: string, account: string) => {
  const idpUrl = new URL(start)
  let response = await browser.get(idpUrl.href)
  for (let hops = 0; hops < 12; hops++) {
    if (response.status === 200) {
      const form = /action="(\/interaction\/[^"]+)"/.exec(await response.text())
      if (form === null) throw new Error("unexpected identity provider page")
      response = await browser.post(new URL(form[1]!, idpUrl).href, { login: account })
      continue
    }
    const next = new URL(response.headers.get("location")!, idpUrl)
    response = await browser.get(next.href)
    if (next.pathname === CALLBACK_PATH) return response
  }
  throw new Error("the provider never sent the browser back")
}

describe("console sign-in through single sign-on", () => {
  it("opens a console session in the provider's organization only, and goes back to /console", async () => {
    const org = await node.bootstrap()
    const domain = `console-${Date.now()}.test`
    expect((await putSso(node, org.api_key, idp, { allowed_email_domains: [domain] })).status).toBe(200)
    const email = `grace@${domain}`
    idp.users.set("grace", { email, email_verified: true, name: "Grace" })
    const browser = new Browser()
    const origin = { origin: node.baseUrl }
    const refused = await browser.postJson(`${node.baseUrl}/console/api/sso`, { email: "nobody@unknown.test" }, origin)
    expect(refused.status).toBe(400)
    expect((await refused.json()).error.code).toBe("bad_request")

    const started = await browser.postJson(`${node.baseUrl}/console/api/sso`, { email }, origin)
    expect(started.status).toBe(200)
    const { location } = await started.json()
    const back = await throughProvider(browser, location, "grace")
    expect(back.status).toBe(303)
    expect(back.headers.get("location")).toBe("/console")
    // Grace is a member of another organization too: the SSO session must not act there
    const other = await node.bootstrap()
    expect((await call(node, other.api_key, "POST", "/v1/members", { email, role: "member" })).status).toBe(201)

    const session = await browser.get(`${node.baseUrl}/console/api/session`)
    expect(session.status).toBe(200)
    const body = await session.json()
    expect(body.user.email).toBe(email)
    expect(body.organization.id).toBe(org.organization_id)
    expect(body.organizations.map((o: any) => o.id)).toEqual([org.organization_id])
    // the REST API takes the session as Grace, in that organization: its agents, none of the other's
    const agent = await call(node, org.api_key, "POST", "/v1/agents", {
      name: "Theirs",
      model: { provider: "scripted", script: [{ text: "hi" }] }
    })
    const listed = await browser.get(`${node.baseUrl}/v1/agents`)
    expect(listed.status).toBe(200)
    expect((await listed.json()).items.map((a: any) => a.id)).toEqual([agent.body.id])
    // forcing the other organization's cookie changes nothing
    browser.cookies.set("sy_console_org", other.organization_id)
    expect((await (await browser.get(`${node.baseUrl}/console/api/session`)).json()).organization.id)
      .toBe(org.organization_id)
  })
})
