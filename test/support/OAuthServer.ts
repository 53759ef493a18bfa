import * as Crypto from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface OAuthServer {
  readonly url: string
  readonly authorizationUrl: string
  readonly tokenUrl: string
  /** Tokens currently accepted by the protected API at `${url}/api/*`. */
  readonly validTokens: Set<string>
  readonly tokenRequests: Array<Record<string, string>>
  /** Seconds a new access token lives. */
  accessTokenLifetime: number
  /** Refuse refresh grants (to test re-authentication). */
  refuseRefresh: boolean
  /** Hold token requests (in `held`, each answering its request when called) instead of answering them. */
  holdTokens: boolean
  readonly held: Array<() => void>
  readonly close: () => Promise<void>
}

/**
 * A small but real OAuth 2.0 server for tests: authorization endpoint that approves at once (redirecting
 * with a code), a token endpoint (authorization_code with PKCE S256, refresh_token, client_credentials;
 * client_secret_basic), and a protected API answering 401 to unknown or expired tokens.
 */
export const startOAuthServer = async (client: { id: string; secret: string }): Promise<OAuthServer> => {
  const codes = new Map<string, { challenge: string; redirectUri: string }>()
  const refreshTokens = new Set<string>()
  const expiry = new Map<string, number>()
  const state = { accessTokenLifetime: 3600, refuseRefresh: false, holdTokens: false }
  const validTokens = new Set<string>()
  const tokenRequests: Array<Record<string, string>> = []
  const held: Array<() => void> = []
  const issue = () => {
    const access = Crypto.randomBytes(16).toString("hex")
    const refresh = Crypto.randomBytes(16).toString("hex")
    validTokens.add(access)
    expiry.set(access, Date.now() + state.accessTokenLifetime * 1000)
    refreshTokens.add(refresh)
    return { access_token: access, token_type: "Bearer", expires_in: state.accessTokenLifetime, refresh_token: refresh }
  }
  const json = (res: Http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" })
    res.end(JSON.stringify(body))
  }
  const server = Http.createServer((req, res) => {
    let body = ""
    req.on("data", (c) => (body += c))
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://oauth")
      if (url.pathname === "/authorize") {
        const p = url.searchParams
        if (p.get("client_id") !== client.id || p.get("code_challenge_method") !== "S256" || !p.get("code_challenge")) {
          return json(res, 400, { error: "invalid_request" })
        }
        const code = Crypto.randomBytes(8).toString("hex")
        codes.set(code, { challenge: p.get("code_challenge")!, redirectUri: p.get("redirect_uri")! })
        const back = new URL(p.get("redirect_uri")!)
        back.searchParams.set("code", code)
        back.searchParams.set("state", p.get("state") ?? "")
        res.writeHead(302, { location: back.toString() })
        return res.end()
      }
      const answerToken = () => {
        const form = Object.fromEntries(new URLSearchParams(body))
        tokenRequests.push(form)
        const [id, secret] = Buffer.from((req.headers.authorization ?? "").replace(/^Basic /, ""), "base64").toString()
          .split(":")
        if (decodeURIComponent(id ?? "") !== client.id || decodeURIComponent(secret ?? "") !== client.secret) {
          return json(res, 401, { error: "invalid_client" })
        }
        if (form.grant_type === "authorization_code") {
          const entry = codes.get(form.code ?? "")
          codes.delete(form.code ?? "")
          const challenge = Crypto.createHash("sha256").update(form.code_verifier ?? "").digest("base64url")
          if (entry === undefined || entry.challenge !== challenge || entry.redirectUri !== form.redirect_uri) {
            return json(res, 400, { error: "invalid_grant" })
          }
          return json(res, 200, issue())
        }
        if (form.grant_type === "refresh_token") {
          if (state.refuseRefresh || !refreshTokens.delete(form.refresh_token ?? "")) {
            return json(res, 400, { error: "invalid_grant" })
          }
          return json(res, 200, issue())
        }
        if (form.grant_type === "client_credentials") {
          const { refresh_token: _, ...tokens } = issue()
          return json(res, 200, tokens)
        }
        return json(res, 400, { error: "unsupported_grant_type" })
      }
      // held (one request), it answers when the test says
      if (url.pathname === "/token") {
        if (!state.holdTokens) return answerToken()
        state.holdTokens = false
        return void held.push(answerToken)
      }
      if (url.pathname.startsWith("/api/")) {
        const token = (req.headers.authorization ?? "").replace(/^Bearer /, "")
        if (!validTokens.has(token) || (expiry.get(token) ?? 0) < Date.now()) {
          return json(res, 401, { error: "invalid_token" })
        }
        return json(res, 200, { ok: true, path: url.pathname, token })
      }
      json(res, 404, { error: "not_found" })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: base,
    authorizationUrl: `${base}/authorize`,
    tokenUrl: `${base}/token`,
    validTokens,
    tokenRequests,
    get accessTokenLifetime() {
      return state.accessTokenLifetime
    },
    set accessTokenLifetime(s: number) {
      state.accessTokenLifetime = s
    },
    held,
    get holdTokens() {
      return state.holdTokens
    },
    set holdTokens(v: boolean) {
      state.holdTokens = v
    },
    get refuseRefresh() {
      return state.refuseRefresh
    },
    set refuseRefresh(v: boolean) {
      state.refuseRefresh = v
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
