import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startOidcProvider, type TestIdp } from "../support/OidcProvider.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { CALLBACK_PATH, putSso } from "./support.js"

let node: TestNode
let idp: TestIdp
beforeAll(async () => {
  node = await startTestNode({
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    SWITCHYARD_TRUST_PROXY: "true",
    SWITCHYARD_RATE_LIMIT_SSO_START_IP: "3"
  })
  idp = await startOidcProvider({ redirectUris: [`${node.baseUrl}${CALLBACK_PATH}`] })
})
afterAll(async () => {
  await idp?.stop()
  await node?.stop()
})

const start = (email: string, ip: string) =>
  fetch(`${node.baseUrl}/console/api/sso`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: node.baseUrl, "x-forwarded-for": ip },
    body: JSON.stringify({ email })
  })

describe("single sign-on starts", () => {
  it("are limited per source address: each stores a pending sign-in before anyone has signed in", async () => {
    const org = await node.bootstrap()
    const domain = `limited-${Date.now()}.test`
    expect((await putSso(node, org.api_key, idp, { allowed_email_domains: [domain] })).status).toBe(200)
    for (let i = 0; i < 3; i++) {
      const started = await start(`p${i}@${domain}`, "203.0.113.7")
      expect(started.status).toBe(200)
      expect((await started.json()).location).toContain(idp.issuer)
    }
    const refused = await start(`p9@${domain}`, "203.0.113.7")
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    expect((await refused.json()).error).toMatchObject({
      code: "rate_limited",
      message: expect.stringContaining("Too many single sign-on starts from your address")
    })
    // another address is not held back, nor is a domain without single sign-on counted
    expect((await start(`p9@${domain}`, "203.0.113.8")).status).toBe(200)
    for (let i = 0; i < 4; i++) expect((await start("x@nowhere.test", "203.0.113.9")).status).toBe(400)
    expect((await start(`p10@${domain}`, "203.0.113.9")).status).toBe(200)
  })
})
