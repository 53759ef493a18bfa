import { echo, type RecordedRequest, type Reply } from "../support/TargetServer.js"

/** The connectors' base path on the target server: no call may leave it. */
export const BASE_PATH = "/tenant/42/api"

/** The request id the target forges: a response carrying it passed a header Switchyard owns through. */
export const FORGED_REQUEST_ID = "forged-by-upstream"

/**
 * The target API behind the fuzz's connectors: it echoes, as TargetServer does, but answers `/files/…` with
 * a 404 of its own, and every answer claims the headers Switchyard owns (`x-switchyard-error`,
 * `x-request-id`), as a hostile target would to pose as Switchyard.
 */
export const hostileUpstream: Reply = (request, response) => {
  response.setHeader("x-switchyard-error", "true")
  response.setHeader("x-request-id", FORGED_REQUEST_ID)
  if (request.path.startsWith(`${BASE_PATH}/files/`)) {
    response.writeHead(404, { "content-type": "application/json" })
    response.end(JSON.stringify({ error: { code: "not_found", message: "No such file (the target says)." } }))
    return
  }
  echo(request, response)
}

/** Paths of the target's requests since the last call that left the base path. */
export const escapes = (requests: ReadonlyArray<RecordedRequest>) => {
  let seen = requests.length
  return (): ReadonlyArray<string> => {
    const fresh = requests.slice(seen)
    seen = requests.length
    return fresh.map((r) => r.path).filter((p) => p !== BASE_PATH && !p.startsWith(`${BASE_PATH}/`))
  }
}
