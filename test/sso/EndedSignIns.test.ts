import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call } from "../access/support.js"
import {
  authorizeUrl,
  Browser,
  hiddenField,
  initialize,
  mcpPost,
  obtainTokens,
  pkce,
  REDIRECT_URI,
  signedUpAdmin,
  token
} from "../mcp/support.js"
import { startOidcProvider, type TestIdp } from "../support/OidcProvider.js"
import type { TestNode } from "../support/TestNode.js"
import { approveAndExchange, CALLBACK_PATH, putSso, signInWithSso, ssoNode, toCallback } from "./support.js"

let node: TestNode
let idp: TestIdp
let other: TestIdp
beforeAll(async () => {
  node = await ssoNode()
  const redirectUris = [`${node.baseUrl}${CALLBACK_PATH}`]
  idp = await startOidcProvider({ redirectUris })
  other = await startOidcProvider({ redirectUris })
})
afterAll(async () => {
  await other?.stop()
  await idp?.stop()
  await node?.stop()
})

/** An organization with single sign-on through `idp`, and Grace signed in through it on the sign-in page. */
const setUp = async (label: string) => {
  const org = await signedUpAdmin(node)
  const domain = `${label}-${Date.now()}.test`
  expect((await putSso(node, org.api_key, idp, { allowed_email_domains: [domain] })).status).toBe(200)
  const account = `grace-${label}-${Date.now()}`
  idp.users.set(account, { email: `grace@${domain}`, email_verified: true, name: "Grace" })
  const signedIn = await signInWithSso(node, `grace@${domain}`, account)
  expect(signedIn.response.status).toBe(200)
  return { org, domain, account, signedIn }
}

const refresh = (client_id: string, refresh_token: string) =>
  token(node, { grant_type: "refresh_token", refresh_token, client_id })

const mcpStatus = async (accessToken: string) =>
  (await mcpPost(node.baseUrl, initialize, { authorization: `Bearer ${accessToken}` }))
    .status

/** A console session opened through the organization's provider. */
const consoleSso = async (domain: string, account: string) => {
  const browser = new Browser()
  const started = await browser.postJson(`${node.baseUrl}/console/api/sso`, { email: `grace@${domain}` }, {
    origin: node.baseUrl
  })
  const response = await browser.get(await toCallback(browser, (await started.json()).location, account))
  expect(response.headers.get("location")).toBe("/console")
  expect((await browser.get(`${node.baseUrl}/console/api/session`)).status).toBe(200)
  return browser
}

describe("changing the identity provider", () => {
  it("a new issuer ends the sessions the old one opened, audited; the next sign-in goes to the new one", async () => {
    const { account, domain, org, signedIn } = await setUp("issuer")
    const console = await consoleSso(domain, account)
    const changed = await putSso(node, org.api_key, other, { allowed_email_domains: [domain] })
    expect(changed.status).toBe(200)
    expect((await console.get(`${node.baseUrl}/console/api/session`)).status).toBe(401)
    // the sign-in page's session of the old provider shows the sign-in form again, not the consent page
    const again = await signedIn.browser.get(`${node.baseUrl}/oauth_login?${hiddenField(signedIn.html, "request")}`)
    expect(await again.text()).toContain("Sign in with SSO")
    const update = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "UPDATE_SSO_SETTINGS")
      .at(-1)
    expect(update.details).toMatchObject({ issuer: other.issuer, sessions_ended: 2 })
  })

  it("a new client id ends them too; the same provider and client keeps them", async () => {
    const { account, domain, org } = await setUp("client")
    const console = await consoleSso(domain, account)
    expect((await putSso(node, org.api_key, idp, { allowed_email_domains: [domain, "x.test"] })).status).toBe(200)
    expect((await console.get(`${node.baseUrl}/console/api/session`)).status).toBe(200)
    const renamed = { issuer: idp.issuer, clientId: "another-client", clientSecret: idp.clientSecret }
    expect((await putSso(node, org.api_key, renamed, { allowed_email_domains: [domain] })).status).toBe(200)
    expect((await console.get(`${node.baseUrl}/console/api/session`)).status).toBe(401)
  })
})

describe("MCP authorizations end with the sign-in that gave them", () => {
  it("turning single sign-on off revokes what its sign-ins authorized; password ones go on", async () => {
    const { domain, org, signedIn } = await setUp("off")
    const sso = await approveAndExchange(node, signedIn)
    expect(sso.status).toBe(200)
    const password = await obtainTokens(node, org.email)
    expect(await mcpStatus(sso.body.access_token)).toBe(200)

    expect((await putSso(node, org.api_key, idp, { allowed_email_domains: [domain], enabled: false })).status).toBe(200)
    expect(await mcpStatus(sso.body.access_token)).toBe(401)
    const refused = await refresh(signedIn.client.client_id, sso.body.refresh_token)
    expect(refused.status).toBe(400)
    expect(refused.body.error).toBe("invalid_grant")
    // the password sign-in's client goes on
    expect(await mcpStatus(password.tokens.access_token)).toBe(200)
    expect((await refresh(password.client.client_id, password.tokens.refresh_token)).status).toBe(200)

    const update = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "UPDATE_SSO_SETTINGS")
      .at(-1)
    expect(update.details.revoked_authorizations).toHaveLength(1)
    expect(update.details.sessions_ended).toBe(1)
  })

  it("removing single sign-on revokes them, and a code approved before cannot be exchanged after", async () => {
    const { org, signedIn } = await setUp("removed")
    const first = await approveAndExchange(node, signedIn)
    expect(first.status).toBe(200)
    // a second approval whose code the client has not exchanged yet
    const { challenge, verifier } = pkce()
    const authorize = await signedIn.browser.get(
      authorizeUrl(node, { client_id: signedIn.client.client_id, challenge })
    )
    const consent = await signedIn.browser.get(authorize.headers.get("location")!)
    const html = await consent.text()
    const decided = await signedIn.browser.post(`${node.baseUrl}/oauth_login`, {
      request: hiddenField(html, "request"),
      csrf: hiddenField(html, "csrf"),
      organization_id: hiddenField(html, "organization_id"),
      action: "approve"
    })
    const code = new URL(decided.headers.get("location")!).searchParams.get("code")!

    expect((await call(node, org.api_key, "DELETE", "/v1/sso")).status).toBe(204)
    expect(await mcpStatus(first.body.access_token)).toBe(401)
    const late = await token(node, {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: signedIn.client.client_id,
      redirect_uri: REDIRECT_URI
    })
    expect(late.status).toBe(400)
    expect(late.body.error).toBe("invalid_grant")
    const removal = (await auditEvents(node, org.organization_id)).find((e) => e.action === "DELETE_SSO_SETTINGS")
    expect(removal.details).toEqual({ sessions_ended: 1, revoked_authorizations: [expect.any(String)] })
  })

  it("a new issuer revokes what the old provider's sign-ins authorized", async () => {
    const { domain, org, signedIn } = await setUp("moved")
    const tokens = await approveAndExchange(node, signedIn)
    expect((await putSso(node, org.api_key, other, { allowed_email_domains: [domain] })).status).toBe(200)
    expect(await mcpStatus(tokens.body.access_token)).toBe(401)
    expect((await refresh(signedIn.client.client_id, tokens.body.refresh_token)).body.error).toBe("invalid_grant")
  })

  it("changing other settings keeps them", async () => {
    const { domain, org, signedIn } = await setUp("kept")
    const tokens = await approveAndExchange(node, signedIn)
    expect((await putSso(node, org.api_key, idp, { allowed_email_domains: [domain, "y.test"] })).status).toBe(200)
    expect(await mcpStatus(tokens.body.access_token)).toBe(200)
    expect((await refresh(signedIn.client.client_id, tokens.body.refresh_token)).status).toBe(200)
  })
})
