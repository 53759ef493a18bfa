import * as Crypto from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * An OpenID provider on 127.0.0.1 whose ID tokens carry exactly the claims a test gives it (an `iat` in the
 * future, `email_verified: "FALSE"`), which a real provider will not mint: discovery, JWKS, an authorization
 * endpoint that approves at once, and a token endpoint (client_secret_basic, PKCE S256) issuing RS256 ID
 * tokens of `claims` over the usual ones (`iss`, `aud`, `sub`, `iat`, `exp`, `nonce`).
 */
export interface ScriptedIdp {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: string
  /** Claims of the next ID tokens, over the usual ones; a claim set to `undefined` is left out. */
  claims: Record<string, unknown>
  readonly stop: () => Promise<void>
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

const readBody = (req: Http.IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

export const startScriptedIdp = async (): Promise<ScriptedIdp> => {
  const clientId = `scripted-${Crypto.randomBytes(4).toString("hex")}`
  const clientSecret = Crypto.randomBytes(24).toString("base64url")
  const { privateKey, publicKey } = Crypto.generateKeyPairSync("rsa", { modulusLength: 2048 })
  const jwk = { ...publicKey.export({ format: "jwk" }), kid: "scripted", alg: "RS256", use: "sig" }
  const codes = new Map<string, { nonce: string | null; challenge: string; redirectUri: string }>()
  const server = Http.createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  const json = (res: Http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" })
    res.end(JSON.stringify(body))
  }
  const sign = (claims: Record<string, unknown>) => {
    const input = `${base64url({ alg: "RS256", typ: "JWT", kid: "scripted" })}.${base64url(claims)}`
    return `${input}.${Crypto.sign("sha256", Buffer.from(input), privateKey).toString("base64url")}`
  }

  server.on("request", async (req, res) => {
    const url = new URL(req.url ?? "/", issuer)
    if (url.pathname === "/.well-known/openid-configuration") {
      return json(res, 200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["client_secret_basic"],
        scopes_supported: ["openid", "email", "profile"]
      })
    }
    if (url.pathname === "/jwks") return json(res, 200, { keys: [jwk] })
    if (url.pathname === "/authorize") {
      const p = url.searchParams
      if (p.get("client_id") !== clientId || p.get("code_challenge_method") !== "S256") {
        return json(res, 400, { error: "invalid_request" })
      }
      const code = Crypto.randomBytes(16).toString("hex")
      codes.set(code, {
        nonce: p.get("nonce"),
        challenge: p.get("code_challenge")!,
        redirectUri: p.get("redirect_uri")!
      })
      const back = new URL(p.get("redirect_uri")!)
      back.searchParams.set("code", code)
      back.searchParams.set("state", p.get("state") ?? "")
      res.writeHead(302, { location: back.href })
      return res.end()
    }
    if (url.pathname === "/token" && req.method === "POST") {
      const form = new URLSearchParams(await readBody(req))
      // RFC 6749 §2.3.1: each half form-encoded before Basic's base64 (openid-client encodes even "-")
      const [id, secret] = Buffer.from((req.headers.authorization ?? "").replace(/^Basic /, ""), "base64").toString()
        .split(":").map((part) => decodeURIComponent(part))
      if (id !== clientId || secret !== clientSecret) return json(res, 401, { error: "invalid_client" })
      const entry = codes.get(form.get("code") ?? "")
      codes.delete(form.get("code") ?? "")
      const challenge = Crypto.createHash("sha256").update(form.get("code_verifier") ?? "").digest("base64url")
      if (entry === undefined || entry.challenge !== challenge || entry.redirectUri !== form.get("redirect_uri")) {
        return json(res, 400, { error: "invalid_grant" })
      }
      const now = Math.floor(Date.now() / 1000)
      const claims = Object.fromEntries(
        Object.entries({
          iss: issuer,
          aud: clientId,
          sub: "scripted-person",
          iat: now,
          exp: now + 600,
          ...(entry.nonce === null ? {} : { nonce: entry.nonce }),
          ...idp.claims
        }).filter(([, v]) => v !== undefined)
      )
      return json(res, 200, {
        access_token: Crypto.randomBytes(16).toString("hex"),
        token_type: "Bearer",
        expires_in: 600,
        id_token: sign(claims)
      })
    }
    json(res, 404, { error: "not_found" })
  })

  const idp: ScriptedIdp = {
    issuer,
    clientId,
    clientSecret,
    claims: {},
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  return idp
}
