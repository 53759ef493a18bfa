import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents } from "../access/support.js"
import type { TestNode } from "../support/TestNode.js"
import { type ScriptedIdp, startScriptedIdp } from "./ScriptedIdp.js"
import { putSso, signInWithSso, ssoNode } from "./support.js"

let node: TestNode
let idp: ScriptedIdp
let organizationId: string
const domain = `claims-${Date.now()}.test`
const email = `ada@${domain}`
beforeAll(async () => {
  node = await ssoNode()
  idp = await startScriptedIdp()
  const org = await node.bootstrap()
  organizationId = org.organization_id
  expect((await putSso(node, org.api_key, idp, { allowed_email_domains: [domain] })).status).toBe(200)
})
afterAll(async () => {
  await idp?.stop()
  await node?.stop()
})

/** A sign-in whose ID token carries these claims: the consent page (200) or the refusal page. */
const signInWith = async (claims: Record<string, unknown>) => {
  idp.claims = { email, email_verified: true, ...claims }
  const signedIn = await signInWithSso(node, email, "unused")
  return { status: signedIn.response.status, html: signedIn.html }
}

describe("the ID token's iat", () => {
  it("may be a little ahead of our clock, not more than 5 minutes", async () => {
    const now = Math.floor(Date.now() / 1000)
    const ahead = await signInWith({ iat: now + 3600, exp: now + 7200 })
    expect(ahead.status, ahead.html).toBe(403)
    expect(ahead.html).toContain("issued in the future")
    const justPast = await signInWith({ iat: now + 6 * 60, exp: now + 7200 })
    expect(justPast.status).toBe(403)
    const skewed = await signInWith({ iat: now + 60 })
    expect(skewed.status, skewed.html).toBe(200)
  })
})

describe("email_verified", () => {
  it("admits only true, or the string \"true\"", async () => {
    for (const value of [true, "true"]) {
      const admitted = await signInWith({ email_verified: value })
      expect({ value, status: admitted.status }).toEqual({ value, status: 200 })
    }
    const refusedValues = ["FALSE", "False", "false", false, 0, 1, "1", "yes", null, {}, undefined]
    for (const value of refusedValues) {
      const refused = await signInWith({ email_verified: value })
      expect({ value, status: refused.status }).toEqual({ value, status: 403 })
      expect(refused.html).toContain("is not verified")
    }
    const denied = (await auditEvents(node, organizationId)).filter((e) =>
      e.action === "SSO_SIGN_IN" && e.outcome === "denied"
    )
    expect(denied.map((e) => e.details.reason)).toEqual(refusedValues.map(() => "email_not_verified"))
  })
})
