import { FiberRef } from "effect"

/** Per-request facts the access log needs, filled in as the request is handled. */
export interface RequestInfo {
  readonly requestId: string
  organizationId: string | undefined
}

export const CurrentRequest = FiberRef.unsafeMake<RequestInfo | undefined>(undefined)
