import { HttpApi } from "@effect/platform"
import { Api } from "../../schema/Api.js"

/** The API's routes as patterns, to tell 405 (path exists, other method) from 404. */
const routes: Array<{ readonly method: string; readonly pattern: RegExp }> = []
HttpApi.reflect(Api, {
  onGroup: () => {},
  onEndpoint: ({ endpoint }) => {
    const pattern = endpoint.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z_]+/g, "[^/]+")
    routes.push({ method: endpoint.method, pattern: new RegExp(`^${pattern}/?$`) })
  }
})

/** Longest path segment the router matches; a longer one gets a 400 naming this limit. */
export const MAX_PATH_SEGMENT = 1024

export const extraRoutes = (method: string, pattern: RegExp) => routes.push({ method, pattern })

export const allowedMethods = (path: string): ReadonlyArray<string> =>
  Array.from(new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method)))
