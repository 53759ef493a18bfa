import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call } from "../access/support.js"
import { Browser, PASSWORD, signedUpAdmin } from "../mcp/support.js"
import { CALLBACK_PATH, putSso, ssoNode, toCallback } from "../sso/support.js"
import { startOidcProvider, type TestIdp } from "../support/OidcProvider.js"
import { eventually } from "../support/Poll.js"
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

/** …and our callback's answer. */
const throughProvider = async (browser: Browser, start: string, account: string) =>
  browser.get(await toCallback(browser, start, account))

/** A new organization with single sign-on, and a sign-in through it by `account`, up to its callback (not yet asked). */
const signInToCallback = async (account: string) => {
  const org = await node.bootstrap()
  const domain = `${account}-${Date.now()}.test`
  expect((await putSso(node, org.api_key, idp, { allowed_email_domains: [domain] })).status).toBe(200)
  idp.users.set(account, { email: `grace@${domain}`, email_verified: true, name: "Grace" })
  const browser = new Browser()
  const started = await browser.postJson(`${node.baseUrl}/console/api/sso`, { email: `grace@${domain}` }, {
    origin: node.baseUrl
  })
  return { org, browser, callback: await toCallback(browser, (await started.json()).location, account) }
}

/**
 * A sign-in's callback answered while `change` (an Admin's, of the organization's settings row) is not yet
 * committed: the callback's session waits for it to be decided. Its answer, and the organization's sessions after.
 */
const callbackDuring = async (
  node: TestNode,
  browser: Browser,
  callback: string,
  change: string,
  organizationId: string
) => {
  const db = new pg.Client({ connectionString: node.databaseUrl })
  const watcher = new pg.Client({ connectionString: node.databaseUrl })
  await db.connect()
  await watcher.connect()
  try {
    await db.query("BEGIN")
    await db.query(change, [organizationId])
    const answered = browser.get(callback)
    await eventually(
      async () => {
        // (from another connection: a transaction sees the activity as it was at its first look)
        const { rows } = await watcher.query(
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO web_sessions%'"
        )
        return rows.length > 0 ? true : undefined
      },
      30_000,
      "the session insert to wait for the settings row"
    )
    await db.query("COMMIT")
    const response = await answered
    const { rows } = await db.query("SELECT count(*)::int AS n FROM web_sessions WHERE organization_id = $1", [
      organizationId
    ])
    return { response, sessions: rows[0].n as number }
  } finally {
    await db.end()
    await watcher.end()
  }
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

describe("console sessions when single sign-on changes", () => {
  /** An organization whose admin signs in with a password, and Grace signed in through its provider. */
  const signedInBoth = async (label: string) => {
    const org = await signedUpAdmin(node)
    const domain = `${label}-${Date.now()}.test`
    expect((await putSso(node, org.api_key, idp, { allowed_email_domains: [domain] })).status).toBe(200)
    const email = `grace@${domain}`
    idp.users.set(`grace-${label}`, { email, email_verified: true, name: "Grace" })
    const sso = new Browser()
    const origin = { origin: node.baseUrl }
    const { location } = await (await sso.postJson(`${node.baseUrl}/console/api/sso`, { email }, origin)).json()
    expect((await throughProvider(sso, location, `grace-${label}`)).status).toBe(303)
    const password = new Browser()
    expect(
      (await password.postJson(`${node.baseUrl}/console/api/sign-in`, { email: org.email, password: PASSWORD }, origin))
        .status
    ).toBe(200)
    for (const browser of [sso, password]) {
      expect((await browser.get(`${node.baseUrl}/console/api/session`)).status).toBe(200)
      expect((await browser.get(`${node.baseUrl}/v1/agents`)).status).toBe(200)
    }
    return { org, sso, password, domain }
  }

  const expectEnded = async (browser: Browser) => {
    expect((await browser.get(`${node.baseUrl}/console/api/session`)).status).toBe(401)
    const api = await browser.get(`${node.baseUrl}/v1/agents`)
    expect(api.status).toBe(401)
    expect((await api.json()).error.code).toBe("invalid_session")
  }

  it("turning single sign-on off ends the sessions it opened; password sessions go on", async () => {
    const { domain, org, password, sso } = await signedInBoth("off")
    const off = await putSso(node, org.api_key, idp, { allowed_email_domains: [domain], enabled: false })
    expect(off.status).toBe(200)
    await expectEnded(sso)
    expect((await password.get(`${node.baseUrl}/console/api/session`)).status).toBe(200)
    expect((await password.get(`${node.baseUrl}/v1/agents`)).status).toBe(200)
    // turning it back on does not bring the ended sessions back
    expect((await putSso(node, org.api_key, idp, { allowed_email_domains: [domain] })).status).toBe(200)
    await expectEnded(sso)
    const updates = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "UPDATE_SSO_SETTINGS")
    expect(updates.map((e) => e.details.sessions_ended)).toEqual([0, 1, 0])
  })

  it("removing the settings ends the sessions it opened; password sessions go on", async () => {
    const { org, password, sso } = await signedInBoth("removed")
    expect((await call(node, org.api_key, "DELETE", "/v1/sso")).status).toBe(204)
    await expectEnded(sso)
    expect((await password.get(`${node.baseUrl}/v1/agents`)).status).toBe(200)
    const removal = (await auditEvents(node, org.organization_id)).find((e) => e.action === "DELETE_SSO_SETTINGS")
    expect(removal.details).toEqual({ sessions_ended: 1, revoked_authorizations: [] })
  })

  it("a sign-in that finishes while single sign-on is being turned off opens no session", async () => {
    const { browser, callback, org } = await signInToCallback("grace-race")
    // an Admin's change turning it off, not yet committed when the callback checks the settings
    const { response, sessions } = await callbackDuring(
      node,
      browser,
      callback,
      "UPDATE sso_settings SET enabled = false WHERE organization_id = $1",
      org.organization_id
    )
    expect(response.status).toBe(403)
    expect(await response.text()).toContain("Single sign-on is turned off for this organization.")
    expect(sessions).toBe(0)
    expect((await browser.get(`${node.baseUrl}/console/api/session`)).status).toBe(401)
  })

  it("a sign-in at the old provider that finishes while the provider is being changed opens no session", async () => {
    const { browser, callback, org } = await signInToCallback("grace-moved")
    // an Admin's change to another client of the provider, not yet committed when the callback checks the settings
    const { response, sessions } = await callbackDuring(
      node,
      browser,
      callback,
      "UPDATE sso_settings SET client_id = 'another-client' WHERE organization_id = $1",
      org.organization_id
    )
    expect(response.status).toBe(403)
    expect(await response.text()).toContain("identity provider changed while you signed in")
    expect(sessions).toBe(0)
  })

  it("changing only the client secret or the domains keeps the sessions", async () => {
    const { domain, org, sso } = await signedInBoth("kept")
    const changed = await putSso(node, org.api_key, idp, { allowed_email_domains: [domain, "more.test"] })
    expect(changed.status).toBe(200)
    expect((await sso.get(`${node.baseUrl}/v1/agents`)).status).toBe(200)
  })
})
