import * as Crypto from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import Provider, { type KoaContextWithOIDC } from "oidc-provider"

/** What the test identity provider says about a person. */
export interface IdpUser {
  email?: string
  email_verified?: boolean
  name?: string
  groups?: ReadonlyArray<string>
}

export interface TestIdp {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: string
  /** People by account id (the ID token's `sub`); change them between sign-ins. */
  readonly users: Map<string, IdpUser>
  /** When set, the JWKS document publishes another key under the signing key's id (a forged signature). */
  forgeJwks: boolean
  readonly stop: () => Promise<void>
}

const readForm = (req: Http.IncomingMessage) =>
  new Promise<URLSearchParams>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(new URLSearchParams(Buffer.concat(chunks).toString("utf8"))))
    req.on("error", reject)
  })

/**
 * A real OpenID Connect provider (the `oidc-provider` package) on 127.0.0.1, in this process: discovery,
 * JWKS, authorization code with PKCE, RS256 ID tokens carrying `email`, `email_verified`, `name` and
 * `groups`. Its login page is a form that takes an account id (`login`); consent is given at once.
 */
export const startOidcProvider = async (options: {
  readonly redirectUris: ReadonlyArray<string>
  readonly clientId?: string
  readonly clientSecret?: string
  /** More clients, with the same secret and redirect URIs (another application at the same issuer). */
  readonly otherClientIds?: ReadonlyArray<string>
}): Promise<TestIdp> => {
  const users = new Map<string, IdpUser>()
  const clientId = options.clientId ?? `switchyard-${Crypto.randomBytes(4).toString("hex")}`
  const clientSecret = options.clientSecret ?? Crypto.randomBytes(24).toString("base64url")
  const server = Http.createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const { privateKey } = Crypto.generateKeyPairSync("rsa", { modulusLength: 2048 })
  const jwk = { ...privateKey.export({ format: "jwk" }), kid: "test-key", alg: "RS256", use: "sig" }

  const provider = new Provider(issuer, {
    clients: [clientId, ...options.otherClientIds ?? []].map((id) => ({
      client_id: id,
      client_secret: clientSecret,
      redirect_uris: [...options.redirectUris],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic" as const
    })),
    jwks: { keys: [jwk as never] },
    cookies: { keys: [Crypto.randomBytes(16).toString("hex")] },
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      profile: ["name"],
      groups: ["groups"]
    },
    // put the scope's claims in the ID token itself (the default keeps them for userinfo)
    conformIdTokenClaims: false,
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: KoaContextWithOIDC, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx: KoaContextWithOIDC, id: string) => {
      const user = users.get(id)
      if (user === undefined) return undefined
      return {
        accountId: id,
        claims: () => ({ sub: id, ...user, ...(user.groups === undefined ? {} : { groups: [...user.groups] }) })
      }
    }
  })
  const callback = provider.callback()

  const interaction = async (req: Http.IncomingMessage, res: Http.ServerResponse) => {
    const details = await provider.interactionDetails(req, res)
    if (details.prompt.name === "login") {
      if (req.method === "GET") {
        res.writeHead(200, { "content-type": "text/html" })
        res.end(
          `<form method="post" action="/interaction/${details.uid}"><input name="login"><button>Sign in</button></form>`
        )
        return
      }
      const login = (await readForm(req)).get("login") ?? ""
      if (!users.has(login)) {
        res.writeHead(401, { "content-type": "text/plain" })
        res.end("unknown account")
        return
      }
      await provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false })
      return
    }
    // consent: everything asked for, at once
    const { params, session } = details
    const grant = details.grantId === undefined
      ? new provider.Grant({ accountId: session!.accountId, clientId: params.client_id as string })
      : (await provider.Grant.find(details.grantId))!
    const missing = details.prompt.details as { missingOIDCScope?: Array<string>; missingOIDCClaims?: Array<string> }
    if (missing.missingOIDCScope !== undefined) grant.addOIDCScope(missing.missingOIDCScope.join(" "))
    if (missing.missingOIDCClaims !== undefined) grant.addOIDCClaims(missing.missingOIDCClaims)
    const grantId = await grant.save()
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true })
  }

  const impostor = Crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ format: "jwk" })
  server.on("request", (req, res) => {
    if (idp.forgeJwks && req.url === "/jwks") {
      res.writeHead(200, { "content-type": "application/jwk-set+json" })
      res.end(JSON.stringify({ keys: [{ ...impostor, kid: "test-key", alg: "RS256", use: "sig" }] }))
    } else if (req.url?.startsWith("/interaction/")) {
      interaction(req, res).catch((e) => {
        res.writeHead(500, { "content-type": "text/plain" })
        res.end(String(e))
      })
    } else {
      void callback(req, res)
    }
  })

  const idp: TestIdp = {
    issuer,
    clientId,
    clientSecret,
    users,
    forgeJwks: false,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  return idp
}
