import { HttpApi } from "@effect/platform"
import { Api } from "../../schema/Api.js"

/** The label of a request no route serves (404s, scans): one value, so they cannot grow the series. */
export const UNMATCHED = "unmatched"

interface Node {
  readonly fixed: Map<string, Node>
  param: Node | undefined
  template: string | undefined
}

const node = (): Node => ({ fixed: new Map(), param: undefined, template: undefined })

const root = node()
HttpApi.reflect(Api, {
  onGroup: () => {},
  onEndpoint: ({ endpoint }) => {
    let at = root
    for (const segment of endpoint.path.split("/").slice(1)) {
      if (segment.startsWith(":")) at = at.param ??= node()
      else {
        const next = at.fixed.get(segment) ?? node()
        at.fixed.set(segment, next)
        at = next
      }
    }
    at.template = endpoint.path
  }
})

const MAX_STATICS = 256

const walk = (path: string): string | undefined => {
  let at: Node | undefined = root
  let start = 1
  const end = path.length > 1 && path.charCodeAt(path.length - 1) === 47 ? path.length - 1 : path.length
  while (at !== undefined && start <= end) {
    let slash = path.indexOf("/", start)
    if (slash === -1 || slash > end) slash = end
    const segment = path.slice(start, slash)
    if (segment === "") return undefined
    at = at.fixed.get(segment) ?? at.param
    start = slash + 1
  }
  return at?.template
}

/**
 * The route a request was for, as its template (`/v1/agents/:agentId/invoke`), for metric labels: a raw path
 * holds ids, and a label per id would grow without bound. Both stacks answer the same routes, so the label of a
 * fast-path request is the template the HttpApi declares for it. Static paths of the node's other routes
 * (`allowedMethods`, its RouteTable) are their own label; anything else is `unmatched`.
 */
export const makeRouteTemplates = (allowedMethods: (path: string) => ReadonlyArray<string>) => {
  // static routes outside the HttpApi (MCP, OAuth, sign-in pages, docs) that were asked for
  const statics = new Map<string, string>([["/docs", "/docs"], ["/openapi.json", "/openapi.json"]])
  return (url: string): string => {
    const query = url.indexOf("?")
    const path = query === -1 ? url : url.slice(0, query)
    const template = walk(path)
    if (template !== undefined) return template
    const known = statics.get(path)
    if (known !== undefined) return known
    if (statics.size < MAX_STATICS && allowedMethods(path).length > 0) {
      statics.set(path, path)
      return path
    }
    return UNMATCHED
  }
}
