import type { AuthorizeRequest } from "../oauth/AuthorizationServer.js"
import { isLoopbackRedirect } from "../oauth/Clients.js"
import { html } from "./Html.js"

const SCOPE_TEXT: Record<string, string> = {
  "mcp:read": "See your agents, tasks, threads, usage and connectors",
  "mcp:write": "Run agents, cancel tasks and invoke connector operations as you"
}

const hidden = (query: string, csrf: string) =>
  html`<input type="hidden" name="request" value="${query}"><input type="hidden" name="csrf" value="${csrf}">`

export const errorPage = (message: string) =>
  html`<h1>This sign-in request cannot be completed</h1><p class="error">${message}</p>
<p>Start again from the application that sent you here.</p>`

export const signInPage = (
  p: { query: string; csrf: string; notice: string | undefined; client: string; offerSso: boolean }
) =>
  html`<h1>Sign in to Switchyard</h1>
<p><strong>${p.client}</strong> asks to use Switchyard on your behalf.</p>
${p.notice === undefined ? "" : html`<p class="error" role="alert">${p.notice}</p>`}
<form method="post" action="/oauth_login">${hidden(p.query, p.csrf)}
<input type="hidden" name="action" value="sign_in">
<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="username" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button class="primary" type="submit">Sign in</button></form>
${p.offerSso ? ssoForm(p.query, p.csrf) : ""}`

/** Single sign-on: the e-mail's domain picks the organization whose identity provider signs the person in. */
const ssoForm = (query: string, csrf: string) =>
  html`<hr><form method="post" action="/oauth_login">${hidden(query, csrf)}
<input type="hidden" name="action" value="sso">
<label for="sso-email">Or sign in with your organization's single sign-on</label>
<input id="sso-email" name="email" type="email" autocomplete="username" placeholder="you@company.com" required>
<button type="submit">Sign in with SSO</button></form>`

export const ssoChoicePage = (p: {
  query: string
  csrf: string
  email: string
  organizations: ReadonlyArray<{ readonly id: string; readonly name: string }>
}) =>
  html`<h1>Choose your organization</h1>
<p>Several organizations sign in people from this e-mail domain. Which one is yours?</p>
<form method="post" action="/oauth_login">${hidden(p.query, p.csrf)}
<input type="hidden" name="action" value="sso"><input type="hidden" name="email" value="${p.email}">
${
    p.organizations.map((o) =>
      html`<button class="primary" type="submit" name="organization_id" value="${o.id}">Sign in with ${o.name} SSO</button>`
    )
  }</form>`

export const consentPage = (p: {
  query: string
  csrf: string
  request: AuthorizeRequest
  user: { readonly email: string; readonly name: string | null }
  organizations: ReadonlyArray<{ readonly id: string; readonly name: string; readonly role: string }>
}) => {
  const { client, redirectUri, resource, scopes } = p.request
  const name = client.name ?? client.id
  const loopback = isLoopbackRedirect(redirectUri)
  const org = p.organizations.length === 1
    ? html`<dd>${p.organizations[0]!.name}<input type="hidden" name="organization_id" value="${
      p.organizations[0]!.id
    }"></dd>`
    : html`<dd><select name="organization_id" required>${
      p.organizations.map((o) => html`<option value="${o.id}">${o.name}</option>`)
    }</select></dd>`
  return html`<h1>Authorize ${name}</h1>
<form method="post" action="/oauth_login">${hidden(p.query, p.csrf)}
<dl>
<dt>Application</dt><dd>${name}${client.name === null ? "" : html` <small>(${client.id})</small>`}</dd>
<dt>Account</dt><dd>${p.user.email}</dd>
<dt>Organization</dt>${
    p.organizations.length === 0 ? html`<dd class="error">You are not a member of any organization.</dd>` : org
  }
<dt>It will be able to</dt><dd><ul>${scopes.map((s) => html`<li>${SCOPE_TEXT[s] ?? s}</li>`)}</ul></dd>
<dt>For</dt><dd>${resource.resource}</dd>
<dt>You will be sent back to</dt><dd><code>${redirectUri}</code></dd>
</dl>
${
    loopback
      ? html`<p class="warn" role="alert">This address is on your own computer (a loopback address). Approve only if you started this sign-in from an application running on this computer.</p>`
      : ""
  }
${
    p.organizations.length === 0
      ? ""
      : html`<button class="primary" type="submit" name="action" value="approve">Approve</button>`
  }<button type="submit" name="action" value="deny">Deny</button>
</form>
<form method="post" action="/oauth_login">${hidden(p.query, p.csrf)}
<p>Not ${p.user.email}? <button class="link" type="submit" name="action" value="sign_out">Sign out</button></p></form>`
}
