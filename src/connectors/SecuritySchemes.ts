import type { AuthType, Credentials } from "../../schema/Connectors.js"
import type { ImportedConnector, SecurityScheme } from "./openapi/OpenApiImport.js"

/** What a connection stores, sealed: the credentials, plus OAuth2 tokens once obtained. */
export type StoredSecret =
  | Exclude<Credentials, { type: "oauth2" }>
  | (Extract<Credentials, { type: "oauth2" }> & {
    readonly access_token?: string
    readonly refresh_token?: string
    readonly expires_at?: number
  })

const authTypesOf = (scheme: SecurityScheme): ReadonlyArray<AuthType> => {
  switch (scheme.type) {
    case "apiKey":
      return ["api_key"]
    case "http":
      return [scheme.scheme]
    case "oauth2":
      return ["oauth2", "bearer"]
    case "openIdConnect":
      return ["bearer"]
  }
}

/** Credential types a connection to this connector may use; `none` when its API needs no auth. */
export const acceptedAuthTypes = (
  connector: Pick<ImportedConnector, "securitySchemes" | "security">
): ReadonlyArray<AuthType> => {
  const schemes = Object.values(connector.securitySchemes)
  const optional = connector.security.length === 0 || connector.security.some((r) => Object.keys(r).length === 0)
  const types = new Set<AuthType>(schemes.flatMap(authTypesOf))
  // `none` on an API that signs users in: calls carry the asking user's own token (user_oidc_token)
  const signsUsersIn = schemes.some((s) => s.type === "oauth2" || s.type === "openIdConnect")
  if (optional || schemes.length === 0 || signsUsersIn) types.add("none")
  return Array.from(types)
}

export type SchemeChoice =
  | { readonly ok: true; readonly authType: AuthType; readonly scheme: string | null }
  | { readonly ok: false; readonly message: string }

/**
 * The security scheme a set of credentials fits: by name when given, else the first that fits, those of the
 * document's `security` before the others.
 */
export const chooseScheme = (connector: ImportedConnector, credentials: Credentials): SchemeChoice => {
  const accepted = acceptedAuthTypes(connector)
  if (!accepted.includes(credentials.type)) {
    return {
      ok: false,
      message: `This connector accepts credentials of type ${accepted.map((t) => `'${t}'`).join(", ")}; ` +
        `got '${credentials.type}'.`
    }
  }
  if (credentials.type === "none") return { ok: true, authType: "none", scheme: null }
  // the schemes the document requires first, in its order (the stored object's key order is PostgreSQL's)
  const names = new Set([...connector.security.flatMap(Object.keys), ...Object.keys(connector.securitySchemes)])
  const entries = [...names].flatMap((name) => {
    const scheme = connector.securitySchemes[name]
    return scheme === undefined ? [] : [[name, scheme] as const]
  })
  if (credentials.type === "api_key" && credentials.scheme !== undefined) {
    const named = connector.securitySchemes[credentials.scheme]
    return named?.type === "apiKey"
      ? { ok: true, authType: "api_key", scheme: credentials.scheme }
      : { ok: false, message: `'${credentials.scheme}' is not an API key security scheme of this connector.` }
  }
  const fitting =
    entries.find(([, s]) =>
      authTypesOf(s).includes(credentials.type) && (credentials.type !== "bearer" || s.type === "http")
    )
      ?? entries.find(([, s]) => authTypesOf(s).includes(credentials.type))
  return { ok: true, authType: credentials.type, scheme: fitting?.[0] ?? null }
}

/** The OAuth2 flow a connection uses: interactive sign-in when the scheme offers it. */
export const oauthFlow = (connector: ImportedConnector, scheme: string | null) => {
  const s = scheme === null ? undefined : connector.securitySchemes[scheme]
  if (s?.type !== "oauth2") return undefined
  if (s.flows.authorizationCode !== undefined) {
    return { kind: "authorizationCode" as const, ...s.flows.authorizationCode }
  }
  if (s.flows.clientCredentials !== undefined) {
    return { kind: "clientCredentials" as const, ...s.flows.clientCredentials }
  }
  return undefined
}

export interface Applied {
  readonly headers: Record<string, string>
  readonly query: Record<string, string>
  readonly cookies: Record<string, string>
}

/** Where each kind of secret goes on the outgoing request. */
export const applySecret = (connector: ImportedConnector, scheme: string | null, secret: StoredSecret): Applied => {
  const applied: Applied = { headers: {}, query: {}, cookies: {} }
  switch (secret.type) {
    case "none":
      return applied
    case "bearer":
      applied.headers["authorization"] = `Bearer ${secret.token}`
      return applied
    case "basic":
      applied.headers["authorization"] = `Basic ${
        Buffer.from(`${secret.username}:${secret.password}`).toString("base64")
      }`
      return applied
    case "oauth2":
      if (secret.access_token !== undefined) applied.headers["authorization"] = `Bearer ${secret.access_token}`
      return applied
    case "api_key": {
      const s = scheme === null ? undefined : connector.securitySchemes[scheme]
      if (s?.type !== "apiKey") {
        applied.headers["authorization"] = `Bearer ${secret.value}`
      } else if (s.in === "header") {
        applied.headers[s.name.toLowerCase()] = secret.value
      } else if (s.in === "query") {
        applied.query[s.name] = secret.value
      } else {
        applied.cookies[s.name] = secret.value
      }
      return applied
    }
  }
}
