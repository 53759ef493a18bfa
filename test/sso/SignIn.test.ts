import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, withDatabase } from "../access/support.js"
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
})
