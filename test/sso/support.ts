import { expect } from "vitest"
import { call } from "../access/support.js"
import { authorizeUrl, Browser, hiddenField, pkce, REDIRECT_URI, registerClient, token } from "../mcp/support.js"
import type { TestIdp } from "../support/OidcProvider.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

export const CALLBACK_PATH = "/oauth_login/sso/callback"

/** A node that may reach identity providers on 127.0.0.1 (the egress guard refuses loopback otherwise). */
export const ssoNode = () => startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })

export const putSso = (
  node: TestNode,
  apiKey: string,
  idp: Pick<TestIdp, "issuer" | "clientId" | "clientSecret">,
  body: Record<string, unknown> = {}
) =>
  call(node, apiKey, "PUT", "/v1/sso", {
    issuer: idp.issuer,
    client_id: idp.clientId,
    client_secret: idp.clientSecret,
    allowed_email_domains: ["acme.test"],
    ...body
  })

/** Through the provider: its login form as `account`, then its redirects, up to the address of our callback. */
export const toCallback = async (browser: Browser, start: string, account: string) => {
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
    if (next.pathname === CALLBACK_PATH) return next.href
    response = await browser.get(next.href)
  }
  throw new Error("the provider never sent the browser back")
}

export interface SignInOptions {
  /** Changes the provider's authorization URL before the browser follows it (tampering). */
  readonly rewriteIdpUrl?: (url: URL) => void
  /** Changes the callback URL before the browser follows it. */
  readonly rewriteCallback?: (url: URL) => void
  /** The browser that receives the provider's answer (default: the one that started). */
  readonly callbackBrowser?: Browser
}

/**
 * What a person does: an MCP client opens `/oauth/authorize`; on the sign-in page they pick single sign-on
 * with their e-mail, sign in at the identity provider as `account`, and come back. Returns the last response
 * (the consent page on success, an error page otherwise) and what is needed to approve.
 */
export const signInWithSso = async (node: TestNode, email: string, account: string, options: SignInOptions = {}) => {
  const browser = new Browser()
  const client = (await registerClient(node)).body
  const { challenge, verifier } = pkce()
  const authorize = await browser.get(authorizeUrl(node, { client_id: client.client_id, challenge }))
  expect(authorize.status).toBe(302)
  const loginUrl = authorize.headers.get("location")!
  const signInHtml = await (await browser.get(loginUrl)).text()
  expect(signInHtml).toContain("Sign in with SSO")
  const started = await browser.post(`${node.baseUrl}/oauth_login`, {
    request: hiddenField(signInHtml, "request"),
    csrf: hiddenField(signInHtml, "csrf"),
    action: "sso",
    email
  })
  if (started.status !== 303) return { response: started, html: await started.text(), browser, client, verifier }
  const idpUrl = new URL(started.headers.get("location")!)
  options.rewriteIdpUrl?.(idpUrl)
  // through the provider: its login form, then redirects until it sends the browser back to us
  let response = await browser.get(idpUrl.href)
  for (let hops = 0; hops < 12; hops++) {
    const location = response.headers.get("location")
    if (response.status === 200) {
      const html = await response.text()
      const form = /action="(\/interaction\/[^"]+)"/.exec(html)
      if (form === null) throw new Error(`unexpected identity provider page: ${html}`)
      response = await browser.post(new URL(form[1]!, idpUrl).href, { login: account })
      continue
    }
    if (location === null) throw new Error(`identity provider answered ${response.status}: ${await response.text()}`)
    const next = new URL(location, idpUrl)
    if (next.pathname === CALLBACK_PATH) {
      options.rewriteCallback?.(next)
      response = await (options.callbackBrowser ?? browser).get(next.href)
      break
    }
    response = await browser.get(next.href)
  }
  if (response.status !== 303) return { response, html: await response.text(), browser, client, verifier }
  const back = new URL(response.headers.get("location")!, node.baseUrl)
  const consent = await browser.get(back.href)
  return { response: consent, html: await consent.text(), browser, client, verifier }
}

/** Approves on the consent page and exchanges the code: the MCP client's tokens. */
export const approveAndExchange = async (
  node: TestNode,
  signedIn: Awaited<ReturnType<typeof signInWithSso>>
) => {
  const decided = await signedIn.browser.post(`${node.baseUrl}/oauth_login`, {
    request: hiddenField(signedIn.html, "request"),
    csrf: hiddenField(signedIn.html, "csrf"),
    organization_id: hiddenField(signedIn.html, "organization_id"),
    action: "approve"
  })
  expect(decided.status).toBe(303)
  const code = new URL(decided.headers.get("location")!).searchParams.get("code")!
  return token(node, {
    grant_type: "authorization_code",
    code,
    code_verifier: signedIn.verifier,
    client_id: signedIn.client.client_id,
    redirect_uri: REDIRECT_URI
  })
}
