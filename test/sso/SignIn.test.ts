import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call, withDatabase } from "../access/support.js"
import { Browser, setPassword } from "../mcp/support.js"
import { startOidcProvider, type TestIdp } from "../support/OidcProvider.js"
import type { TestNode } from "../support/TestNode.js"
import { approveAndExchange, CALLBACK_PATH, putSso, signInWithSso, ssoNode } from "./support.js"

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

let counter = 0
/** An organization with SSO for its own e-mail domain, and two groups mapped from the provider's. */
const ssoOrganization = async () => {
  const org = await node.bootstrap()
  const domain = `org${++counter}-${Date.now()}.test`
  const engineers =
    (await call(node, org.api_key, "POST", "/v1/groups", { name: "Engineers", default_role: "builder" }))
      .body
  const support = (await call(node, org.api_key, "POST", "/v1/groups", { name: "Support" })).body
  const put = await putSso(node, org.api_key, idp, {
    allowed_email_domains: [domain],
    group_mapping: [
      { idp_group: "eng", group_id: engineers.id },
      { idp_group: "support", group_id: support.id }
    ]
  })
  expect(put.status).toBe(200)
  return { org, domain, engineers, support }
}

const membership = (organizationId: string, email: string) =>
  withDatabase(node, async (db) => {
    const member = (await db.query(
      `SELECT u.id, m.role FROM users u JOIN memberships m ON m.user_id = u.id
       WHERE m.organization_id = $1 AND lower(u.email) = lower($2)`,
      [organizationId, email]
    )).rows[0]
    if (member === undefined) return undefined
    const groups = (await db.query(
      `SELECT g.name FROM group_members gm JOIN groups g ON g.id = gm.group_id
       WHERE gm.organization_id = $1 AND gm.user_id = $2 ORDER BY g.name`,
      [organizationId, member.id]
    )).rows.map((r) => r.name)
    return { role: member.role as string, groups }
  })

describe("sign-in through the identity provider", () => {
  it("provisions the person on first sign-in with their mapped groups and the groups' role", async () => {
    const { org, domain } = await ssoOrganization()
    const email = `ada@${domain}`
    idp.users.set(`ada-${counter}`, { email, email_verified: true, name: "Ada", groups: ["eng", "support", "other"] })
    const signedIn = await signInWithSso(node, email, `ada-${counter}`)
    expect(signedIn.response.status, signedIn.html).toBe(200)
    expect(signedIn.html).toContain("Authorize")
    expect(signedIn.html).toContain(email)
    expect(await membership(org.organization_id, email)).toEqual({ role: "builder", groups: ["Engineers", "Support"] })
    const tokens = await approveAndExchange(node, signedIn)
    expect(tokens.status).toBe(200)
  })

  it("syncs groups on every sign-in: a group the provider dropped is left, unmapped groups stay", async () => {
    const { org, domain, engineers } = await ssoOrganization()
    const email = `grace@${domain}`
    const account = `grace-${counter}`
    idp.users.set(account, { email, email_verified: true, groups: ["support"] })
    expect((await signInWithSso(node, email, account)).response.status).toBe(200)
    expect(await membership(org.organization_id, email)).toEqual({ role: "member", groups: ["Support"] })
    // an Admin adds her to an unmapped group by hand; SSO leaves it alone
    const manual = (await call(node, org.api_key, "POST", "/v1/groups", { name: "Book club" })).body
    const userId = (await call(node, org.api_key, "GET", "/v1/members")).body.items
      .find((m: { user: { email: string } }) => m.user.email === email).user.id
    expect((await call(node, org.api_key, "POST", `/v1/groups/${manual.id}/members`, { user_id: userId })).status)
      .toBe(201)

    idp.users.set(account, { email, email_verified: true, groups: ["eng"] })
    expect((await signInWithSso(node, email, account)).response.status).toBe(200)
    expect(await membership(org.organization_id, email)).toEqual({
      role: "builder",
      groups: ["Book club", "Engineers"]
    })

    idp.users.set(account, { email, email_verified: true, groups: [] })
    const third = await signInWithSso(node, email, account)
    expect(third.response.status).toBe(200)
    // leaving a group keeps the role, as everywhere in groups
    expect(await membership(org.organization_id, email)).toEqual({ role: "builder", groups: ["Book club"] })

    const events = await auditEvents(node, org.organization_id)
    const sync = events.filter((e) => e.details?.via === "sso").map((
      e
    ) => [e.action, e.targets[0].name ?? e.targets[0].id])
    expect(sync).toEqual([
      ["ADD_MEMBER", email],
      ["ADD_GROUP_MEMBER", "Support"],
      ["UPDATE_MEMBER_ROLE", email],
      ["ADD_GROUP_MEMBER", "Engineers"],
      ["REMOVE_GROUP_MEMBER", "Support"],
      ["REMOVE_GROUP_MEMBER", "Engineers"]
    ])
    const signIns = events.filter((e) => e.action === "SSO_SIGN_IN")
    expect(signIns.map((e) => [e.actor_type, e.actor_id, e.details.provisioned])).toEqual([
      ["user", userId, true],
      ["user", userId, false],
      ["user", userId, false]
    ])
    expect(engineers.id).toBeDefined()
  })

  it("refuses an e-mail outside the allowed domains, and an unverified one, with a clear page", async () => {
    const { org, domain } = await ssoOrganization()
    const outsider = `mallory-${counter}`
    // she types an allowed address, but the provider vouches for another domain's
    idp.users.set(outsider, { email: "mallory@elsewhere.test", email_verified: true, groups: ["eng"] })
    const refused = await signInWithSso(node, `mallory@${domain}`, outsider)
    expect(refused.response.status).toBe(403)
    expect(refused.html).toContain("elsewhere.test is not one it allows")
    expect(refused.browser.cookies.has("sy_session")).toBe(false)

    const unverified = `trent-${counter}`
    idp.users.set(unverified, { email: `trent@${domain}`, email_verified: false })
    const notVerified = await signInWithSso(node, `trent@${domain}`, unverified)
    expect(notVerified.response.status).toBe(403)
    expect(notVerified.html).toContain("not verified")

    expect(await membership(org.organization_id, "mallory@elsewhere.test")).toBeUndefined()
    expect(await membership(org.organization_id, `trent@${domain}`)).toBeUndefined()
    const denied = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "SSO_SIGN_IN")
    expect(denied.map((e) => [e.outcome, e.details.reason])).toEqual([
      ["denied", "email_domain_not_allowed"],
      ["denied", "email_not_verified"]
    ])
  })

  it("says so when no organization signs in that domain", async () => {
    const signedIn = await signInWithSso(node, "ada@nobody-has-this.test", "none")
    expect(signedIn.response.status).toBe(400)
    expect(signedIn.html).toContain("Single sign-on is not set up for nobody-has-this.test")
  })
})

describe("the answer from the provider is checked", () => {
  it("refuses a changed state, a changed nonce, another browser and a replayed answer", async () => {
    const { org, domain } = await ssoOrganization()
    const email = `eve@${domain}`
    const account = `eve-${counter}`
    idp.users.set(account, { email, email_verified: true })

    const state = await signInWithSso(node, email, account, {
      rewriteIdpUrl: (url) => url.searchParams.set("state", "forged-state")
    })
    expect(state.response.status).toBe(400)
    expect(state.html).toContain("state")

    const nonce = await signInWithSso(node, email, account, {
      rewriteIdpUrl: (url) => url.searchParams.set("nonce", "forged-nonce")
    })
    expect(nonce.response.status).toBe(403)
    expect(nonce.html).toMatch(/could not be verified.*nonce/s)

    const elsewhere = await signInWithSso(node, email, account, { callbackBrowser: new Browser() })
    expect(elsewhere.response.status).toBe(400)
    expect(elsewhere.html).toContain("another browser")

    let callback: URL | undefined
    const first = await signInWithSso(node, email, account, {
      rewriteCallback: (url) => void (callback = new URL(url))
    })
    expect(first.response.status).toBe(200)
    const replay = await first.browser.get(callback!.href)
    expect(replay.status).toBe(400)

    const code = await signInWithSso(node, email, account, {
      rewriteCallback: (url) => url.searchParams.set("code", "forged-code")
    })
    expect(code.response.status).toBe(403)
    // only the one honest sign-in got through
    const signIns = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "SSO_SIGN_IN")
    expect(signIns.map((e) => e.outcome)).toEqual(["success"])
  })
})

describe("a wrong client secret", () => {
  it("is accepted when saved (only the token endpoint can tell), then named at sign-in for an administrator", async () => {
    const org = await node.bootstrap()
    const domain = `secret${++counter}-${Date.now()}.test`
    const put = await putSso(node, org.api_key, { ...idp, clientSecret: "not-the-secret" }, {
      allowed_email_domains: [domain]
    })
    expect(put.status).toBe(200)
    const account = `wrong-secret-${counter}`
    idp.users.set(account, { email: `ian@${domain}`, email_verified: true })
    const refused = await signInWithSso(node, `ian@${domain}`, account)
    expect(refused.response.status, refused.html.slice(-600)).toBe(502)
    expect(refused.html).toContain("refused Switchyard&#39;s client credentials (invalid_client)")
    expect(refused.html).toContain("client secret in the single sign-on settings")
    expect(await membership(org.organization_id, `ian@${domain}`)).toBeUndefined()
  })
})

describe("the ID token's signature", () => {
  it("is checked against the provider's JWKS", async () => {
    const { org, domain } = await ssoOrganization()
    const account = `forged-${counter}`
    idp.users.set(account, { email: `oscar@${domain}`, email_verified: true, groups: ["eng"] })
    idp.forgeJwks = true
    try {
      const forged = await signInWithSso(node, `oscar@${domain}`, account)
      expect(forged.response.status).toBe(403)
      expect(forged.html).toContain("could not be verified")
    } finally {
      idp.forgeJwks = false
    }
    expect(await membership(org.organization_id, `oscar@${domain}`)).toBeUndefined()
  })
})

describe("organizations stay apart", () => {
  it("a session from one organization's provider acts in that organization only", async () => {
    const a = await ssoOrganization()
    // the same person is already a password member of another organization
    const other = await node.bootstrap("Other Org")
    const email = `dual@${a.domain}`
    expect((await call(node, other.api_key, "POST", "/v1/members", { email, role: "admin" })).status).toBe(201)
    await setPassword(node, email, "correct horse battery staple")
    const account = `dual-${counter}`
    idp.users.set(account, { email, email_verified: true, groups: ["support"] })
    const signedIn = await signInWithSso(node, email, account)
    expect(signedIn.response.status).toBe(200)
    expect(signedIn.html).not.toContain("Other Org")
    expect(signedIn.html).not.toContain(other.organization_id)
    // forcing the other organization on approval is refused
    const forced = await signedIn.browser.post(`${node.baseUrl}/oauth_login`, {
      request: /name="request" value="([^"]*)"/.exec(signedIn.html)![1]!.replace(
        /&#(\d+);/g,
        (_, c) => String.fromCharCode(Number(c))
      ),
      csrf: /name="csrf" value="([^"]*)"/.exec(signedIn.html)![1]!,
      organization_id: other.organization_id,
      action: "approve"
    })
    expect(forced.status).toBe(400)
    // and nothing changed in the other organization
    expect(await membership(other.organization_id, email)).toEqual({ role: "admin", groups: [] })
    expect(await membership(a.org.organization_id, email)).toEqual({ role: "member", groups: ["Support"] })
    const tokens = await approveAndExchange(node, signedIn)
    expect(tokens.status).toBe(200)
    const grant = await withDatabase(
      node,
      async (db) =>
        (await db.query("SELECT organization_id FROM oauth_grants ORDER BY created_at DESC LIMIT 1")).rows[0]
    )
    expect(grant.organization_id).toBe(a.org.organization_id)
  })

  it("another organization's settings do not sign in people of this one", async () => {
    const a = await ssoOrganization()
    const b = await ssoOrganization()
    const account = `cross-${counter}`
    // the provider vouches for an address of organization A's domain, through organization B's settings
    idp.users.set(account, { email: `spy@${a.domain}`, email_verified: true, groups: ["eng"] })
    const refused = await signInWithSso(node, `spy@${b.domain}`, account)
    expect(refused.response.status).toBe(403)
    expect(await membership(a.org.organization_id, `spy@${a.domain}`)).toBeUndefined()
    expect(await membership(b.org.organization_id, `spy@${a.domain}`)).toBeUndefined()
  })
})
