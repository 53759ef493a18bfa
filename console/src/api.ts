import { QueryClient } from "@tanstack/react-query"
import { type components, createFetchClient } from "../../src/client/fetch.js"

/** The API's shapes, from the OpenAPI document (src/client/openapi.d.ts): no hand-typed copies. */
export type Schemas = components["schemas"]
export type Role = Schemas["Role"]

let csrfToken = ""

/**
 * The public REST API, typed from the OpenAPI document. The session cookie goes with every call (same
 * origin); changing calls also carry the session's CSRF token, without which the API refuses them.
 */
export const api = createFetchClient({
  baseUrl: window.location.origin,
  fetch: (request) => {
    if (request.method !== "GET" && request.method !== "HEAD") request.headers.set("x-csrf-token", csrfToken)
    return fetch(request)
  }
})

/** An error the API answered, with its stable code and its message (shown as is). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly details?: unknown) {
    super(message)
  }
}

const toApiError = (response: Response, body: unknown): ApiError => {
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error
  return typeof error?.message === "string"
    ? new ApiError(response.status, String(error.code ?? "error"), error.message, error.details)
    : new ApiError(response.status, "http_error", `The server answered ${response.status} ${response.statusText}.`)
}

/** The data of a successful call; any other answer throws its ApiError. */
export const ok = async <T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> => {
  const result = await call
  // the session ended (signed out in another tab, expired) or changed: ask who is signed in now, which
  // shows the sign-in form or renews the CSRF token
  if (result.response.status === 401) void queryClient.invalidateQueries({ queryKey: ["session"] })
  if (!result.response.ok) throw toApiError(result.response, result.error)
  return result.data as T
}

/** What `/console/api/session` tells about the signed-in person (the console's own endpoint, not the API). */
export interface Session {
  readonly user: { readonly id: string; readonly email: string; readonly name: string | null }
  readonly organization: { readonly id: string; readonly name: string }
  readonly role: Role
  readonly organizations: ReadonlyArray<{ readonly id: string; readonly name: string; readonly role: Role }>
  readonly csrf_token: string
}

const sessionCall = async (path: string, body?: unknown, signal?: AbortSignal): Promise<Session | null> => {
  const response = await fetch(`/console/api/${path}`, {
    ...(signal !== undefined ? { signal } : {}),
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "content-type": "application/json", "x-csrf-token": csrfToken },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const json = await response.json().catch(() => undefined)
  if (response.status === 401 && path === "session") return null
  if (!response.ok) throw toApiError(response, json)
  const session = json as Session
  if (typeof session.csrf_token === "string") csrfToken = session.csrf_token
  return session
}

/** Another person or organization than before drops every other cached answer: they were someone else's view. */
const forgetOthers = (session: Session | null) => {
  const before = queryClient.getQueryData<Session | null>(["session"])
  const who = (s: Session | null | undefined) => s ? `${s.user.id}/${s.organization.id}` : ""
  if (who(before) !== who(session)) queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== "session" })
}

/** Signed in, out or into another organization: a check of the session still under way is stale now. */
export const setSession = (session: Session | null) => {
  void queryClient.cancelQueries({ queryKey: ["session"] })
  forgetOthers(session)
  queryClient.setQueryData(["session"], session)
}

export const loadSession = async ({ signal }: { readonly signal: AbortSignal }) => {
  const session = await sessionCall("session", undefined, signal)
  if (!signal.aborted) forgetOthers(session)
  return session
}

export const signIn = (email: string, password: string) => sessionCall("sign-in", { email, password })
export const signOut = () => sessionCall("sign-out", {})

/** What starting single sign-on answers: where to send the browser, or the organizations to choose from. */
export type SsoStart =
  | { readonly location: string }
  | { readonly organizations: ReadonlyArray<{ readonly id: string; readonly name: string }> }

export const startSso = async (email: string, organizationId?: string): Promise<SsoStart> => {
  const response = await fetch("/console/api/sso", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(organizationId === undefined ? { email } : { email, organization_id: organizationId })
  })
  const json = await response.json().catch(() => undefined)
  if (!response.ok) throw toApiError(response, json)
  return json as SsoStart
}
export const switchOrganization = (organizationId: string) =>
  sessionCall("organization", { organization_id: organizationId })

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
      refetchOnWindowFocus: false,
      staleTime: 5_000
    }
  }
})

const rank: Record<Role, number> = { member: 0, builder: 1, admin: 2, super_admin: 3 }
export const roleAtLeast = (role: Role, minimum: Role) => rank[role] >= rank[minimum]
export const roleNames: Record<Role, string> = {
  super_admin: "Super admin",
  admin: "Admin",
  builder: "Builder",
  member: "Member"
}
