import { describe, type ImportContext, isObject, pointer } from "./ImportContext.js"

const trimTrailingSlash = (url: string) => url.length > 1 ? url.replace(/\/+$/, "") || "/" : url

const substitute = (ctx: ImportContext, url: string, variables: unknown, at: string) =>
  url.replace(/\{([^}]*)\}/g, (whole, name: string) => {
    const variable = isObject(variables) ? variables[name] : undefined
    if (isObject(variable) && typeof variable.default === "string") return variable.default
    if (isObject(variable) && Array.isArray(variable.enum) && typeof variable.enum[0] === "string") {
      return variable.enum[0]
    }
    ctx.warn(pointer(at, "variables", name), `server variable "${name}" has no default; left as ${whole}`)
    return whole
  })

/**
 * OAS 3 `servers` (of the document, a path item or an operation, at `at`): variables take their defaults;
 * relative URLs stay relative (the caller may override).
 */
export const openApiServers = (ctx: ImportContext, servers: unknown, at: string): Array<string> => {
  if (servers === undefined) return []
  if (!Array.isArray(servers)) {
    ctx.warn(at, `servers must be an array, got ${describe(servers)}; ignored`)
    return []
  }
  const urls: Array<string> = []
  servers.forEach((server, index) => {
    const where = pointer(at, index)
    if (!isObject(server) || typeof server.url !== "string") {
      ctx.warn(where, "server has no url; ignored")
      return
    }
    const url = trimTrailingSlash(substitute(ctx, server.url, server.variables, where))
    if (!urls.includes(url)) urls.push(url)
  })
  return urls
}

/** Swagger 2.0: scheme://host + basePath for each declared scheme (https when none is declared). */
const swaggerServers = (ctx: ImportContext): Array<string> => {
  const { basePath, host, schemes } = ctx.document
  const base = typeof basePath === "string" ? basePath : ""
  if (typeof host !== "string" || host === "") return base === "" ? [] : [trimTrailingSlash(base)]
  const declared = Array.isArray(schemes)
    ? schemes.filter((scheme): scheme is string => typeof scheme === "string" && /^(https?|wss?)$/i.test(scheme))
    : []
  const ordered = declared.length > 0 ? declared.map((scheme) => scheme.toLowerCase()) : ["https"]
  return ordered.map((scheme) => trimTrailingSlash(`${scheme}://${host}${base.startsWith("/") ? base : `/${base}`}`))
}

export const serversOf = (ctx: ImportContext): Array<string> => {
  const servers = ctx.version === "2.0" ? swaggerServers(ctx) : openApiServers(ctx, ctx.document.servers, "/servers")
  if (servers.length === 0) {
    ctx.warn(ctx.version === "2.0" ? "/host" : "/servers", "no server declared; a base URL must be supplied")
  }
  return servers
}

/** The first absolute server, if any. */
export const absoluteServer = (servers: ReadonlyArray<string> | undefined): string | undefined =>
  servers?.find((server) => /^https?:\/\//i.test(server))

/** The server calls go to by default: the first absolute one (a relative one needs a `server_url`). */
export const defaultServer = (servers: ReadonlyArray<string> | undefined): string | undefined =>
  absoluteServer(servers) ?? servers?.[0]
