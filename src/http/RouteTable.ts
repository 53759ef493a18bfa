import { HttpApi } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../../schema/Api.js"

interface Route {
  readonly method: string
  readonly pattern: RegExp
}

/** The API's routes as patterns, to tell 405 (path exists, other method) from 404. */
const apiRoutes: Array<Route> = []
HttpApi.reflect(Api, {
  onGroup: () => {},
  onEndpoint: ({ endpoint }) => {
    const pattern = endpoint.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z_]+/g, "[^/]+")
    apiRoutes.push({ method: endpoint.method, pattern: new RegExp(`^${pattern}/?$`) })
  }
})

/** Longest path segment the router matches; a longer one gets a 400 naming this limit. */
export const MAX_PATH_SEGMENT = 1024

/**
 * A node's routes: the API's, and those its layers serve outside the HttpApi (MCP resources, OAuth, sign-in
 * pages, the console), which depend on its configuration. One per node, so nodes in one process (tests) do
 * not see each other's.
 */
export class RouteTable extends Effect.Service<RouteTable>()("http/RouteTable", {
  sync: () => {
    const routes: Array<Route> = [...apiRoutes]
    return {
      /** A route served outside the HttpApi: its other methods get 405, not 404. */
      add: (method: string, pattern: RegExp): void => void routes.push({ method, pattern }),
      /** The methods some route serves at `path` (none: 404). */
      allowedMethods: (path: string): ReadonlyArray<string> =>
        Array.from(new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method)))
    }
  }
}) {}
