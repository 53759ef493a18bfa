import { describe, type ImportContext, isObject, type JsonObject, pointer } from "./ImportContext.js"
import type { SecurityScheme } from "./ImportedConnector.js"

export type SecurityRequirement = Readonly<Record<string, ReadonlyArray<string>>>

const optionalString = <K extends string>(key: K, value: unknown): { [P in K]?: string } =>
  (typeof value === "string" ? { [key]: value } : {}) as { [P in K]?: string }

const scopesOf = (value: unknown): Record<string, string> =>
  isObject(value)
    ? Object.fromEntries(Object.entries(value).map(([scope, text]) => [scope, typeof text === "string" ? text : ""]))
    : {}

type Flows = Extract<SecurityScheme, { type: "oauth2" }>["flows"]

const authorizationCode = (flow: unknown, ctx: ImportContext, at: string): Flows["authorizationCode"] => {
  if (!isObject(flow)) return undefined
  if (typeof flow.authorizationUrl !== "string" || typeof flow.tokenUrl !== "string") {
    ctx.warn(at, "authorization code flow needs authorizationUrl and tokenUrl; flow ignored")
    return undefined
  }
  return {
    authorizationUrl: flow.authorizationUrl,
    tokenUrl: flow.tokenUrl,
    ...optionalString("refreshUrl", flow.refreshUrl),
    scopes: scopesOf(flow.scopes)
  }
}

const clientCredentials = (flow: unknown, ctx: ImportContext, at: string): Flows["clientCredentials"] => {
  if (!isObject(flow)) return undefined
  if (typeof flow.tokenUrl !== "string") {
    ctx.warn(at, "client credentials flow needs tokenUrl; flow ignored")
    return undefined
  }
  return { tokenUrl: flow.tokenUrl, ...optionalString("refreshUrl", flow.refreshUrl), scopes: scopesOf(flow.scopes) }
}

const oauth2 = (flows: Flows, description: { description?: string }, ctx: ImportContext, at: string) => {
  if (flows.authorizationCode === undefined && flows.clientCredentials === undefined) {
    ctx.warn(at, "oauth2 scheme has no supported flow (authorization code or client credentials); scheme ignored")
    return undefined
  }
  return { type: "oauth2" as const, flows, ...description }
}

const openApiScheme = (ctx: ImportContext, raw: JsonObject, at: string): SecurityScheme | undefined => {
  const description = optionalString("description", raw.description)
  switch (raw.type) {
    case "apiKey":
      if ((raw.in === "header" || raw.in === "query" || raw.in === "cookie") && typeof raw.name === "string") {
        return { type: "apiKey", in: raw.in, name: raw.name, ...description }
      }
      ctx.warn(at, "apiKey scheme needs name and in (header, query or cookie); scheme ignored")
      return undefined
    case "http": {
      const scheme = typeof raw.scheme === "string" ? raw.scheme.toLowerCase() : raw.scheme
      if (scheme === "bearer" || scheme === "basic") {
        return { type: "http", scheme, ...optionalString("bearerFormat", raw.bearerFormat), ...description }
      }
      ctx.warn(at, `unsupported http authentication scheme ${JSON.stringify(raw.scheme)}; scheme ignored`)
      return undefined
    }
    case "oauth2": {
      const flows = isObject(raw.flows) ? raw.flows : {}
      for (const flow of ["implicit", "password"]) {
        if (flows[flow] !== undefined) {
          ctx.warn(pointer(at, "flows", flow), `oauth2 ${flow} flow is not supported; ignored`)
        }
      }
      const code = authorizationCode(flows.authorizationCode, ctx, pointer(at, "flows", "authorizationCode"))
      const client = clientCredentials(flows.clientCredentials, ctx, pointer(at, "flows", "clientCredentials"))
      const supported = {
        ...(code ? { authorizationCode: code } : {}),
        ...(client ? { clientCredentials: client } : {})
      }
      return oauth2(supported, description, ctx, at)
    }
    case "openIdConnect":
      if (typeof raw.openIdConnectUrl === "string") {
        return { type: "openIdConnect", openIdConnectUrl: raw.openIdConnectUrl, ...description }
      }
      ctx.warn(at, "openIdConnect scheme needs openIdConnectUrl; scheme ignored")
      return undefined
    default:
      ctx.warn(at, `unsupported security scheme type ${JSON.stringify(raw.type)}; scheme ignored`)
      return undefined
  }
}

const swaggerScheme = (ctx: ImportContext, raw: JsonObject, at: string): SecurityScheme | undefined => {
  const description = optionalString("description", raw.description)
  switch (raw.type) {
    case "basic":
      return { type: "http", scheme: "basic", ...description }
    case "apiKey":
      return openApiScheme(ctx, raw, at)
    case "oauth2": {
      if (raw.flow !== "accessCode" && raw.flow !== "application") {
        ctx.warn(pointer(at, "flow"), `oauth2 ${JSON.stringify(raw.flow)} flow is not supported; ignored`)
      }
      const code = raw.flow === "accessCode" ? authorizationCode(raw, ctx, at) : undefined
      const client = raw.flow === "application" ? clientCredentials(raw, ctx, at) : undefined
      const supported = {
        ...(code ? { authorizationCode: code } : {}),
        ...(client ? { clientCredentials: client } : {})
      }
      return oauth2(supported, description, ctx, at)
    }
    default:
      ctx.warn(at, `unsupported security scheme type ${JSON.stringify(raw.type)}; scheme ignored`)
      return undefined
  }
}

/** `components.securitySchemes` (OAS 3) or `securityDefinitions` (Swagger 2.0). */
export const securitySchemesOf = (ctx: ImportContext): Record<string, SecurityScheme> => {
  const swagger = ctx.version === "2.0"
  const at = swagger ? "/securityDefinitions" : "/components/securitySchemes"
  const container = swagger
    ? ctx.document.securityDefinitions
    : isObject(ctx.document.components)
    ? ctx.document.components.securitySchemes
    : undefined
  if (container === undefined) return {}
  if (!isObject(container)) {
    ctx.warn(at, `security schemes must be an object, got ${describe(container)}; ignored`)
    return {}
  }
  const schemes: Record<string, SecurityScheme> = {}
  for (const [name, raw] of Object.entries(container)) {
    const resolved = ctx.resolve(raw, pointer(at, name))
    if (resolved === undefined) continue
    if (!isObject(resolved.value)) {
      ctx.warn(resolved.pointer, "security scheme is not an object; ignored")
      continue
    }
    const scheme = swagger
      ? swaggerScheme(ctx, resolved.value, resolved.pointer)
      : openApiScheme(ctx, resolved.value, resolved.pointer)
    if (scheme !== undefined) schemes[name] = scheme
  }
  return schemes
}

/** A `security` list; undefined when absent. Requirements naming unknown schemes are kept, with a warning. */
export const securityRequirementsOf = (
  ctx: ImportContext,
  raw: unknown,
  at: string,
  schemes: Readonly<Record<string, SecurityScheme>>
): Array<SecurityRequirement> | undefined => {
  if (raw === undefined) return undefined
  if (!Array.isArray(raw)) {
    ctx.warn(at, `security must be an array, got ${describe(raw)}; ignored`)
    return undefined
  }
  const requirements: Array<SecurityRequirement> = []
  raw.forEach((requirement, index) => {
    if (!isObject(requirement)) {
      ctx.warn(pointer(at, index), "security requirement is not an object; ignored")
      return
    }
    const entries = Object.entries(requirement).map(([name, scopes]) => {
      if (!(name in schemes)) {
        ctx.warn(pointer(at, index, name), `security requirement names undefined or unsupported scheme "${name}"`)
      }
      const list = Array.isArray(scopes) ? scopes.filter((scope): scope is string => typeof scope === "string") : []
      return [name, list] as const
    })
    // e.g. an API key and an application key, both on every call: a connection holds one scheme's credentials
    if (entries.length > 1) {
      ctx.warn(
        pointer(at, index),
        `security requirement needs ${entries.map(([name]) => `"${name}"`).join(" and ")} together; ` +
          "a connection supplies one of them, so calls carry only that scheme's credentials"
      )
    }
    requirements.push(Object.fromEntries(entries))
  })
  return requirements
}
