import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, auditEvents, call, expectError, orgKey, withDatabase } from "../access/support.js"
import { startOidcProvider, type TestIdp } from "../support/OidcProvider.js"
import { freePort } from "../support/ports.js"
import type { TestNode } from "../support/TestNode.js"
import { CALLBACK_PATH, putSso, ssoNode } from "./support.js"

let node: TestNode
let idp: TestIdp
let notOidc: Http.Server
let notOidcUrl: string
beforeAll(async () => {
  node = await ssoNode()
  idp = await startOidcProvider({ redirectUris: [`${node.baseUrl}${CALLBACK_PATH}`] })
  // answers, but not as an OpenID provider
  notOidc = Http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" })
    res.end("<html>hello</html>")
  })
  await new Promise<void>((resolve) => notOidc.listen(0, "127.0.0.1", resolve))
  notOidcUrl = `http://127.0.0.1:${(notOidc.address() as AddressInfo).port}`
})
afterAll(async () => {
  notOidc?.close()
  await idp?.stop()
  await node?.stop()
})

const storedSecret = (organizationId: string) =>
  withDatabase(
    node,
    async (db) =>
      (await db.query("SELECT client_secret FROM sso_settings WHERE organization_id = $1", [organizationId]))
        .rows[0]?.client_secret as Buffer | undefined
  )

describe("SSO settings", () => {
  it("a PUT of the settings held changes nothing: not written, not audited", async () => {
    const org = await node.bootstrap()
    const set = await putSso(node, org.api_key, idp, { group_mapping: [] })
    expect(set.status, JSON.stringify(set.body)).toBe(200)
    const before = await auditEvents(node, org.organization_id)
    for (const body of [{}, { client_secret: undefined }, { allowed_email_domains: ["ACME.test"] }]) {
      const again = await putSso(node, org.api_key, idp, body)
      expect(again.status, JSON.stringify(again.body)).toBe(200)
      expect(again.body).toEqual(set.body)
    }
    expect(await auditEvents(node, org.organization_id)).toEqual(before)
    // the secret held, sent again with a change of something else: recorded as no change of the secret
    expect((await putSso(node, org.api_key, idp, { group_claim: "roles" })).status).toBe(200)
    const [last] = (await auditEvents(node, org.organization_id)).slice(-1)
    expect(last).toMatchObject({
      action: "UPDATE_SSO_SETTINGS",
      details: { group_claim: "roles", client_secret_changed: false }
    })
  })

  it("stores the client secret encrypted and never returns it", async () => {
    const org = await node.bootstrap()
    const put = await putSso(node, org.api_key, idp, { allowed_email_domains: ["Acme.test", "acme.test"] })
    expect(put.status).toBe(200)
    expect(put.body).toMatchObject({
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret_set: true,
      allowed_email_domains: ["acme.test"],
      group_claim: "groups",
      group_mapping: [],
      enabled: true,
      redirect_uri: `${node.baseUrl}${CALLBACK_PATH}`
    })
    const got = await call(node, org.api_key, "GET", "/v1/sso")
    expect(got.status).toBe(200)
    for (const body of [put.body, got.body]) {
      expect(body).not.toHaveProperty("client_secret")
      expect(JSON.stringify(body)).not.toContain(idp.clientSecret)
    }
    const sealed = await storedSecret(org.organization_id)
    expect(sealed!.length).toBeGreaterThan(idp.clientSecret.length)
    expect(sealed!.toString("latin1")).not.toContain(idp.clientSecret)
    expect(sealed!.toString("base64")).not.toContain(idp.clientSecret)

    // an update without a secret keeps the stored one as it was
    const again = await putSso(node, org.api_key, idp, { client_secret: undefined, enabled: false })
    expect(again.body).toMatchObject({ enabled: false, client_secret_set: true })
    expect((await storedSecret(org.organization_id))!.equals(sealed!)).toBe(true)

    const events = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "UPDATE_SSO_SETTINGS")
    expect(events.map((e) => [e.details.created, e.details.client_secret_changed])).toEqual([[true, true], [
      false,
      false
    ]])
    expect(JSON.stringify(events)).not.toContain(idp.clientSecret)
  })

  it("answers bad input with 400 naming the field", async () => {
    const org = await node.bootstrap()
    const noSecret = await putSso(node, org.api_key, idp, { client_secret: undefined })
    expectError(noSecret, 400, "validation_failed")
    expect(noSecret.body.error.message).toContain("client_secret")
    const bad = await putSso(node, org.api_key, idp, {
      issuer: "http://idp.example.com",
      allowed_email_domains: ["not a domain"],
      group_mapping: [{ idp_group: "eng", group_id: "nope" }]
    })
    expectError(bad, 400, "validation_failed")
    const paths = bad.body.error.details.issues.map((i: { path: string }) => i.path)
    expect(paths).toEqual(expect.arrayContaining(["issuer", "allowed_email_domains.0", "group_mapping.0.group_id"]))
    const none = await putSso(node, org.api_key, idp, { allowed_email_domains: [] })
    expectError(none, 400, "validation_failed")
    const unknownGroup = await putSso(node, org.api_key, idp, {
      group_mapping: [{ idp_group: "eng", group_id: "6f1c0000-0000-4000-8000-000000000000" }]
    })
    expectError(unknownGroup, 400, "unknown_group")
    expect((await call(node, org.api_key, "GET", "/v1/sso")).status).toBe(404)
  })

  it("refuses an issuer that cannot be reached or is not an OpenID provider (422)", async () => {
    const org = await node.bootstrap()
    const closed = await putSso(node, org.api_key, idp, { issuer: `http://127.0.0.1:${await freePort()}` })
    expectError(closed, 422, "sso_issuer_unreachable")
    const refused = await putSso(node, org.api_key, idp, { issuer: `http://[::1]:${await freePort()}` })
    expectError(refused, 422, "sso_issuer_unreachable")
    expect(refused.body.error.message).toContain("SWITCHYARD_EGRESS_ALLOW")
    const html = await putSso(node, org.api_key, idp, { issuer: notOidcUrl })
    expectError(html, 422, "sso_issuer_not_oidc")
    // another provider's metadata: its issuer is not the one configured
    const foreign = await putSso(node, org.api_key, idp, { issuer: `${idp.issuer}/other` })
    expect(foreign.status).toBe(422)
    expect((await call(node, org.api_key, "GET", "/v1/sso")).status).toBe(404)
  })

  it("deletes the settings, audited", async () => {
    const org = await node.bootstrap()
    expect((await putSso(node, org.api_key, idp)).status).toBe(200)
    expect((await call(node, org.api_key, "DELETE", "/v1/sso")).status).toBe(204)
    const gone = await call(node, org.api_key, "GET", "/v1/sso")
    expectError(gone, 404, "not_found")
    // before (re)setup an administrator still learns the redirect URI to register at the provider
    const redirectUri = `${node.baseUrl}/oauth_login/sso/callback`
    expect(gone.body.error.details).toEqual({ redirect_uri: redirectUri })
    expect(gone.body.error.message).toContain(redirectUri)
    expectError(await call(node, org.api_key, "DELETE", "/v1/sso"), 404, "not_found")
    expect(await storedSecret(org.organization_id)).toBeUndefined()
    const actions = (await auditEvents(node, org.organization_id)).map((e) => e.action)
    expect(actions.filter((a) => a.endsWith("SSO_SETTINGS"))).toEqual(["UPDATE_SSO_SETTINGS", "DELETE_SSO_SETTINGS"])
  })

  it("is for Admins and above: every lower role gets 403, recorded", async () => {
    const org = await node.bootstrap()
    expect((await putSso(node, org.api_key, idp)).status).toBe(200)
    const callers = [
      (await addMember(node, org.api_key, "builder")).key,
      (await addMember(node, org.api_key, "member")).key,
      (await orgKey(node, org.api_key, "builder")).key,
      (await orgKey(node, org.api_key, "member")).key
    ]
    for (const key of callers) {
      expectError(await call(node, key, "GET", "/v1/sso"), 403, "forbidden")
      expectError(await putSso(node, key, idp, { enabled: false }), 403, "forbidden")
      expectError(await call(node, key, "DELETE", "/v1/sso"), 403, "forbidden")
    }
    const admin = await addMember(node, org.api_key, "admin")
    expect((await call(node, admin.key, "GET", "/v1/sso")).status).toBe(200)
    expect((await call(node, org.api_key, "GET", "/v1/sso")).body.enabled).toBe(true)
    const denied = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "ACCESS_DENIED")
    expect(denied.length).toBe(callers.length * 3)
  })

  it("keeps organizations apart", async () => {
    const a = await node.bootstrap()
    const b = await node.bootstrap()
    expect((await putSso(node, a.api_key, idp, { allowed_email_domains: ["a.test"] })).status).toBe(200)
    expectError(await call(node, b.api_key, "GET", "/v1/sso"), 404, "not_found")
    expectError(await call(node, b.api_key, "DELETE", "/v1/sso"), 404, "not_found")
    // a group of another organization cannot be mapped
    const groupOfA = (await call(node, a.api_key, "POST", "/v1/groups", { name: "A team" })).body
    expectError(
      await putSso(node, b.api_key, idp, { group_mapping: [{ idp_group: "x", group_id: groupOfA.id }] }),
      400,
      "unknown_group"
    )
    expect((await call(node, a.api_key, "GET", "/v1/sso")).body.allowed_email_domains).toEqual(["a.test"])
  })

  it("lets an Admin map only groups whose default role they could grant", async () => {
    const org = await node.bootstrap()
    const supers =
      (await call(node, org.api_key, "POST", "/v1/groups", { name: "Owners", default_role: "super_admin" }))
        .body
    const admin = await addMember(node, org.api_key, "admin")
    expectError(
      await putSso(node, admin.key, idp, { group_mapping: [{ idp_group: "owners", group_id: supers.id }] }),
      403,
      "forbidden"
    )
    expect(
      (await putSso(node, org.api_key, idp, { group_mapping: [{ idp_group: "owners", group_id: supers.id }] })).status
    ).toBe(200)
  })
})
