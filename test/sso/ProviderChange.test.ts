import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call, withDatabase } from "../access/support.js"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { startOidcProvider, type TestIdp } from "../support/OidcProvider.js"
import type { TestNode } from "../support/TestNode.js"
import { CALLBACK_PATH, putSso, signInWithSso, ssoNode } from "./support.js"

/**
 * An organization moves to another identity provider (another issuer, or another client at the same one): its
 * people are found again by the e-mail the new provider verifies, and nobody takes over another's account.
 */
let node: TestNode
let first: TestIdp
let second: TestIdp
const OTHER_CLIENT = "switchyard-second-app"
beforeAll(async () => {
  node = await ssoNode()
  const redirectUris = [`${node.baseUrl}${CALLBACK_PATH}`]
  first = await startOidcProvider({ redirectUris, otherClientIds: [OTHER_CLIENT] })
  second = await startOidcProvider({ redirectUris })
})
afterAll(async () => {
  await first?.stop()
  await second?.stop()
  await node?.stop()
})

let counter = 0
/** An organization signing its domain in through the first provider, with a mapped group and a hand-kept one. */
const organization = async () => {
  const org = await node.bootstrap()
  const domain = `move${++counter}-${Date.now()}.test`
  const engineers = (await call(node, org.api_key, "POST", "/v1/groups", { name: "Engineers" })).body
  const bookClub = (await call(node, org.api_key, "POST", "/v1/groups", { name: "Book club" })).body
  const settings = { allowed_email_domains: [domain], group_mapping: [{ idp_group: "eng", group_id: engineers.id }] }
  expect((await putSso(node, org.api_key, first, settings)).status).toBe(200)
  return { org, domain, bookClub, settings }
}

const identities = (organizationId: string) =>
  withDatabase(node, async (db) =>
    (await db.query(
      "SELECT issuer, client_id, subject, user_id FROM sso_identities WHERE organization_id = $1 ORDER BY created_at",
      [organizationId]
    )).rows)

const member = (organizationId: string, userId: string) =>
  withDatabase(node, async (db) => {
    const role = (await db.query("SELECT role FROM memberships WHERE organization_id = $1 AND user_id = $2", [
      organizationId,
      userId
    ])).rows[0]?.role
    const groups = (await db.query(
      `SELECT g.name FROM group_members gm JOIN groups g ON g.id = gm.group_id
       WHERE gm.organization_id = $1 AND gm.user_id = $2 ORDER BY g.name`,
      [organizationId, userId]
    )).rows.map((r) => r.name)
    return { role, groups }
  })

const usersWith = (email: string) =>
  withDatabase(
    node,
    async (db) => (await db.query("SELECT id FROM users WHERE lower(email) = lower($1)", [email])).rows.map((r) => r.id)
  )

const signIns = async (organizationId: string) =>
  (await auditEvents(node, organizationId)).filter((e) => e.action === "SSO_SIGN_IN").map((e) =>
    e.outcome === "success" ? [e.details.issuer, e.details.matched] : [e.details.issuer, e.details.reason]
  )

/** Ada signed in through the first provider; an Admin made her an Admin, put her in a group, she has a connection. */
const adaAtFirst = async () => {
  const setup = await organization()
  const { org, domain, bookClub } = setup
  const email = `ada@${domain}`
  first.users.set(`ada-1-${counter}`, { email, email_verified: true, groups: ["eng"] })
  const signedIn = await signInWithSso(node, email, `ada-1-${counter}`)
  expect(signedIn.response.status, signedIn.html).toBe(200)
  const [link] = await identities(org.organization_id)
  const userId: string = link.user_id
  expect((await call(node, org.api_key, "PATCH", `/v1/members/${userId}`, { role: "admin" })).status).toBe(200)
  expect((await call(node, org.api_key, "POST", `/v1/groups/${bookClub.id}/members`, { user_id: userId })).status)
    .toBe(201)
  const personalKey = (await call(node, org.api_key, "POST", "/v1/api-keys", { name: "ada", user_id: userId })).body
    .api_key
  const connector = await createConnector(node, org.api_key, petstore("http://127.0.0.1:9"))
  const connection = await createConnection(node, personalKey, connector.id, {
    name: "mine",
    access_scope: "personal",
    credentials: { type: "api_key", value: "ada-key" }
  })
  expect(await member(org.organization_id, userId)).toEqual({ role: "admin", groups: ["Book club", "Engineers"] })
  return { ...setup, email, userId, personalKey, connection }
}

describe("an organization that moves to another identity provider", () => {
  it("finds its people by the e-mail the new provider verifies: the same user, role, groups and connections", async () => {
    const { org, settings, email, userId, personalKey, connection } = await adaAtFirst()
    expect((await putSso(node, org.api_key, second, settings)).status).toBe(200)

    // another account (another `sub`) at another issuer, the same address, written otherwise
    second.users.set(`ada-2-${counter}`, { email: email.toUpperCase(), email_verified: true, groups: ["eng"] })
    const again = await signInWithSso(node, email, `ada-2-${counter}`)
    expect(again.response.status, again.html).toBe(200)

    expect(await usersWith(email)).toEqual([userId])
    expect(await member(org.organization_id, userId)).toEqual({ role: "admin", groups: ["Book club", "Engineers"] })
    const personal = await call(
      node,
      personalKey,
      "GET",
      `/v1/tools/connectors/${connection.connector_id}/connections/${connection.id}`
    )
    expect(personal.status).toBe(200)
    expect(personal.body.owner_user_id).toBe(userId)
    // the old provider's link is kept beside the new one
    expect((await identities(org.organization_id)).map((r) => [r.issuer, r.client_id, r.subject, r.user_id]))
      .toEqual([
        [first.issuer, first.clientId, `ada-1-${counter}`, userId],
        [second.issuer, second.clientId, `ada-2-${counter}`, userId]
      ])
    expect(await signIns(org.organization_id)).toEqual([[first.issuer, "email"], [second.issuer, "email"]])
  })

  it("refuses an address the new provider does not verify, and makes nobody of it", async () => {
    const { org, settings, email, userId } = await adaAtFirst()
    expect((await putSso(node, org.api_key, second, settings)).status).toBe(200)

    for (
      const [account, verified] of [[`ada-false-${counter}`, false], [`ada-absent-${counter}`, undefined]] as const
    ) {
      second.users.set(account, {
        email,
        ...(verified === undefined ? {} : { email_verified: verified }),
        groups: ["eng"]
      })
      const refused = await signInWithSso(node, email, account)
      expect(refused.response.status).toBe(403)
      expect(refused.html).toContain("not verified")
      expect(refused.browser.cookies.has("sy_session")).toBe(false)
    }
    expect(await usersWith(email)).toEqual([userId])
    expect((await identities(org.organization_id)).map((r) => r.issuer)).toEqual([first.issuer])
    expect(await member(org.organization_id, userId)).toEqual({ role: "admin", groups: ["Book club", "Engineers"] })
    expect((await signIns(org.organization_id)).slice(1)).toEqual([
      [second.issuer, "email_not_verified"],
      [second.issuer, "email_not_verified"]
    ])
  })

  it("signs people in through the old provider again, by their old link, when it is set back", async () => {
    const { org, settings, email, userId } = await adaAtFirst()
    expect((await putSso(node, org.api_key, second, settings)).status).toBe(200)
    second.users.set(`ada-2-${counter}`, { email, email_verified: true, groups: ["eng"] })
    expect((await signInWithSso(node, email, `ada-2-${counter}`)).response.status).toBe(200)

    expect((await putSso(node, org.api_key, first, settings)).status).toBe(200)
    // her e-mail changed at the first provider meanwhile: the link by subject still finds her
    first.users.set(`ada-1-${counter}`, {
      email: `ada.lovelace@${settings.allowed_email_domains[0]}`,
      email_verified: true
    })
    const back = await signInWithSso(node, email, `ada-1-${counter}`)
    expect(back.response.status, back.html).toBe(200)
    expect(await member(org.organization_id, userId)).toEqual({ role: "admin", groups: ["Book club"] })
    expect((await identities(org.organization_id)).length).toBe(2)
    expect(await signIns(org.organization_id)).toEqual([
      [first.issuer, "email"],
      [second.issuer, "email"],
      [first.issuer, "subject"]
    ])
  })

  it("finds them by e-mail after a change of client at the same issuer (whose subjects may be per client)", async () => {
    const { org, settings, email, userId } = await adaAtFirst()
    expect((await putSso(node, org.api_key, { ...first, clientId: OTHER_CLIENT }, settings)).status).toBe(200)
    // providers such as Entra ID give each application its own subjects
    first.users.set(`ada-pairwise-${counter}`, { email, email_verified: true, groups: ["eng"] })
    const again = await signInWithSso(node, email, `ada-pairwise-${counter}`)
    expect(again.response.status, again.html).toBe(200)
    expect(await member(org.organization_id, userId)).toEqual({ role: "admin", groups: ["Book club", "Engineers"] })
    expect((await identities(org.organization_id)).map((r) => [r.client_id, r.user_id])).toEqual([
      [first.clientId, userId],
      [OTHER_CLIENT, userId]
    ])
  })
})

describe("an address passed to another account at the same provider", () => {
  it("does not take over the person it was linked to, until an Admin removes that member", async () => {
    const { org, email, userId, personalKey, connection } = await adaAtFirst()
    // the provider now vouches for her address for another account (she left; it was given to someone else)
    first.users.set(`newcomer-${counter}`, { email, email_verified: true, groups: ["eng"] })
    const refused = await signInWithSso(node, email, `newcomer-${counter}`)
    expect(refused.response.status).toBe(403)
    expect(refused.html).toContain("another account of this identity provider")
    expect(refused.browser.cookies.has("sy_session")).toBe(false)
    expect(await member(org.organization_id, userId)).toEqual({ role: "admin", groups: ["Book club", "Engineers"] })
    expect((await identities(org.organization_id)).map((r) => r.subject)).toEqual([`ada-1-${counter}`])
    expect((await signIns(org.organization_id)).at(-1)).toEqual([first.issuer, "subject_changed"])

    // the Admin removes the former member: her role, groups, key, connection and link go; the newcomer starts anew
    expect((await call(node, org.api_key, "DELETE", `/v1/members/${userId}`)).status).toBe(204)
    expect(await identities(org.organization_id)).toEqual([])
    const fresh = await signInWithSso(node, email, `newcomer-${counter}`)
    expect(fresh.response.status, fresh.html).toBe(200)
    expect(await member(org.organization_id, userId)).toEqual({ role: "member", groups: ["Engineers"] })
    expect((await call(node, personalKey, "GET", "/v1/members")).status).toBe(401)
    const gone = await withDatabase(
      node,
      async (db) =>
        (await db.query("SELECT deleted_at IS NOT NULL AS deleted FROM connections WHERE id = $1", [connection.id]))
          .rows
    )
    expect(gone).toEqual([{ deleted: true }])
    expect((await identities(org.organization_id)).map((r) => r.subject)).toEqual([`newcomer-${counter}`])
  })

  it("nor after a change of client at the same issuer, once the person signed in through the new client", async () => {
    const { org, settings, email, userId } = await adaAtFirst()
    expect((await putSso(node, org.api_key, { ...first, clientId: OTHER_CLIENT }, settings)).status).toBe(200)
    // most providers keep a person's subject across their applications: Ada is found by it
    const again = await signInWithSso(node, email, `ada-1-${counter}`)
    expect(again.response.status, again.html).toBe(200)
    first.users.set(`newcomer-${counter}`, { email, email_verified: true, groups: ["eng"] })
    const refused = await signInWithSso(node, email, `newcomer-${counter}`)
    expect(refused.response.status).toBe(403)
    expect(await member(org.organization_id, userId)).toEqual({ role: "admin", groups: ["Book club", "Engineers"] })
    expect((await signIns(org.organization_id)).slice(1)).toEqual([
      [first.issuer, "subject"],
      [first.issuer, "subject_changed"]
    ])
  })

  it("is not refused for a person no longer a member (removed before removals forgot the links)", async () => {
    const { org, email, userId } = await adaAtFirst()
    await withDatabase(
      node,
      (db) =>
        db.query("DELETE FROM memberships WHERE organization_id = $1 AND user_id = $2", [org.organization_id, userId])
    )
    first.users.set(`heir-${counter}`, { email, email_verified: true, groups: [] })
    const signedIn = await signInWithSso(node, email, `heir-${counter}`)
    expect(signedIn.response.status, signedIn.html).toBe(200)
    expect(await member(org.organization_id, userId)).toEqual({ role: "member", groups: [] })
  })
})
