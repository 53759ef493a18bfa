import { Effect, Either, ParseResult, Schema } from "effect"
import { request } from "undici"
import { ClientMetadataDocument, ClientRegistrationRequest } from "../../schema/OAuth.js"
import { Egress } from "../connectors/Egress.js"
import { OAuthError } from "./OAuthError.js"
import { type ClientRow, OAuthRepo } from "./OAuthRepo.js"
import { SCOPES } from "./Resources.js"
import { hashOf, randomSecret, sameSecret } from "./Secrets.js"

const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"])

/** Long enough for any real callback; each is stored, shown on the consent page and checked on every request. */
const MAX_REDIRECT_URI_LENGTH = 2_000

/** Redirect URIs are https, or http on loopback (native apps, RFC 8252); no fragments. */
export const redirectUriProblem = (uri: string): string | undefined => {
  if (uri.length > MAX_REDIRECT_URI_LENGTH) {
    return `A redirect URI is at most ${MAX_REDIRECT_URI_LENGTH} characters; one has ${uri.length}.`
  }
  if (!URL.canParse(uri)) return `'${uri}' is not an absolute URL`
  const url = new URL(uri)
  if (url.hash !== "" || uri.includes("#")) return `'${uri}' has a fragment`
  if (url.protocol === "https:") return undefined
  if (url.protocol === "http:" && LOOPBACK.has(url.hostname)) return undefined
  return `'${uri}' must be https, or http on a loopback address (127.0.0.1, [::1], localhost)`
}

export const isLoopbackRedirect = (uri: string) => URL.canParse(uri) && LOOPBACK.has(new URL(uri).hostname)

/** Client ids that are URLs name a Client ID Metadata Document: https with a path. */
export const isMetadataDocumentId = (id: string) =>
  URL.canParse(id) && new URL(id).protocol === "https:" && new URL(id).pathname !== "/"

const METADATA_TIMEOUT_MS = 5_000
const METADATA_MAX_BYTES = 64 * 1024
const METADATA_FRESH_MS = 60 * 60 * 1000
/** Redirect URIs a client may register: every authorization request is checked against each. */
const MAX_REDIRECT_URIS = 20

const decodeRegistration = Schema.decodeUnknownEither(ClientRegistrationRequest, { errors: "all" })
const decodeDocument = Schema.decodeUnknownEither(ClientMetadataDocument, { errors: "all" })

const isHttpUrl = (uri: string) => URL.canParse(uri) && ["http:", "https:"].includes(new URL(uri).protocol)

const checkMetadata = (input: ClientRegistrationRequest): Effect.Effect<void, OAuthError> => {
  if (input.redirect_uris.length > MAX_REDIRECT_URIS) {
    return Effect.fail(
      OAuthError.of(
        "invalid_client_metadata",
        `At most ${MAX_REDIRECT_URIS} \`redirect_uris\` (got ${input.redirect_uris.length}).`
      )
    )
  }
  for (const uri of input.redirect_uris) {
    const problem = redirectUriProblem(uri)
    if (problem !== undefined) return Effect.fail(OAuthError.of("invalid_redirect_uri", problem))
  }
  const unknownScope = (input.scope ?? "").split(" ").find((s) =>
    s !== "" && !(SCOPES as ReadonlyArray<string>).includes(s)
  )
  if (unknownScope !== undefined) {
    return Effect.fail(OAuthError.of("invalid_client_metadata", `Unknown scope '${unknownScope}'.`))
  }
  // it names the client's home page, for a person to open: no `javascript:` or `data:` address
  if (input.client_uri !== undefined && !isHttpUrl(input.client_uri)) {
    return Effect.fail(OAuthError.of("invalid_client_metadata", "`client_uri` must be an absolute http(s) URL."))
  }
  return Effect.void
}

const issues = (error: ParseResult.ParseError) =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ")

/** OAuth clients: dynamic registration (RFC 7591), metadata documents, and client authentication. */
export class Clients extends Effect.Service<Clients>()("oauth/Clients", {
  effect: Effect.gen(function*() {
    const repo = yield* OAuthRepo
    const egress = yield* Egress

    const register = Effect.fn("Clients.register")(function*(body: unknown) {
      const input = decodeRegistration(body)
      if (Either.isLeft(input)) return yield* OAuthError.of("invalid_client_metadata", issues(input.left))
      yield* checkMetadata(input.right)
      const method = input.right.token_endpoint_auth_method ?? "client_secret_basic"
      const secret = method === "none" ? undefined : randomSecret("sy_cs_")
      const id = randomSecret("sy_client_").slice(0, 40)
      const row = yield* repo.insertClient({
        id,
        kind: "registered",
        name: input.right.client_name ?? null,
        client_uri: input.right.client_uri ?? null,
        redirect_uris: input.right.redirect_uris,
        auth_method: method,
        secret_hash: secret === undefined ? null : hashOf(secret),
        scope: input.right.scope ?? null
      })
      return {
        client_id: row!.id,
        ...(secret === undefined ? {} : { client_secret: secret, client_secret_expires_at: 0 }),
        client_id_issued_at: Math.floor(row!.created_at.getTime() / 1000),
        client_name: row!.name ?? undefined,
        client_uri: row!.client_uri ?? undefined,
        redirect_uris: row!.redirect_uris,
        token_endpoint_auth_method: method,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        ...(row!.scope === null ? {} : { scope: row!.scope })
      }
    })

    /**
     * Fetches a Client ID Metadata Document through the egress guard (no internal addresses, no redirects).
     * Whoever names the URL is not signed in: why it failed (TLS errors, what an address resolves to) is
     * logged, and the answer only says that it failed.
     */
    const fetchDocument = (id: string) =>
      Effect.tryPromise({
        try: async (signal) => {
          const response = await request(id, {
            method: "GET",
            dispatcher: egress.dispatcher,
            signal,
            headers: { accept: "application/json" },
            maxRedirections: 0
          } as never)
          if (response.statusCode !== 200) {
            await response.body.dump()
            throw new Error(`it answered HTTP ${response.statusCode}`)
          }
          let size = 0
          const chunks: Array<Buffer> = []
          for await (const chunk of response.body) {
            size += chunk.length
            if (size > METADATA_MAX_BYTES) throw new Error(`it is larger than ${METADATA_MAX_BYTES} bytes`)
            chunks.push(chunk)
          }
          return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown
        },
        catch: egress.explain
      }).pipe(
        // Effect's deadline, which aborts `signal`: an AbortSignal.timeout inside AbortSignal.any is not kept
        // alive by Node 20, and once collected a silent host would hold the registration for ever
        Effect.timeoutFail({ duration: METADATA_TIMEOUT_MS, onTimeout: () => "no answer within 5 s" }),
        Effect.tapError((reason) =>
          Effect.logWarning("client metadata document not fetched").pipe(
            Effect.annotateLogs({ client_id: id, reason })
          )
        ),
        Effect.mapError(() =>
          OAuthError.of("invalid_client", `Could not fetch the client's metadata document (${id}).`)
        )
      )

    const fromDocument = Effect.fn("Clients.fromDocument")(function*(id: string) {
      const document = decodeDocument(yield* fetchDocument(id))
      if (Either.isLeft(document)) {
        return yield* OAuthError.of(
          "invalid_client",
          `The client's metadata document is not valid: ${issues(document.left)}`
        )
      }
      if (document.right.client_id !== id) {
        return yield* OAuthError.of("invalid_client", "The metadata document's `client_id` is not its own URL.")
      }
      yield* checkMetadata(document.right).pipe(
        Effect.mapError((e) => OAuthError.of("invalid_client", `The client's metadata document: ${e.description}`))
      )
      const method = document.right.token_endpoint_auth_method ?? "none"
      if (method !== "none") {
        return yield* OAuthError.of("invalid_client", "Metadata-document clients are public: use `none`.")
      }
      return (yield* repo.insertClient({
        id,
        kind: "metadata_document",
        name: document.right.client_name ?? null,
        client_uri: document.right.client_uri ?? null,
        redirect_uris: document.right.redirect_uris,
        auth_method: "none",
        secret_hash: null,
        scope: document.right.scope ?? null
      }))!
    })

    /** The client named by `client_id`: registered here, or a metadata document (cached for an hour). */
    const resolve = (id: string): Effect.Effect<ClientRow, OAuthError, never> =>
      Effect.gen(function*() {
        if (id === "" || id.length > 2000) return yield* OAuthError.of("invalid_client", "Unknown `client_id`.")
        const row = yield* repo.findClient(id)
        const fresh = row !== undefined &&
          (row.kind === "registered" || Date.now() - (row.fetched_at?.getTime() ?? 0) < METADATA_FRESH_MS)
        if (fresh) return row
        if (isMetadataDocumentId(id)) return yield* fromDocument(id)
        return yield* OAuthError.of("invalid_client", "Unknown `client_id`: register the client at /oauth/register.")
      })

    /**
     * Client authentication at the token and revocation endpoints: public clients name themselves,
     * confidential ones prove their secret (HTTP Basic or the form's `client_secret`). The form's parameters
     * were checked to be given once; a client named twice (Basic and the form) must be named alike, and
     * proves its secret one way only (RFC 6749 §2.3).
     */
    const authenticate = (authorization: string | undefined, form: URLSearchParams) =>
      Effect.gen(function*() {
        let id = form.get("client_id") ?? undefined
        let secret = form.get("client_secret") ?? undefined
        let basic = false
        if (authorization !== undefined && /^basic\s/i.test(authorization)) {
          const decoded = Buffer.from(authorization.replace(/^basic\s+/i, ""), "base64").toString("utf8")
          const colon = decoded.indexOf(":")
          if (colon < 0) return yield* OAuthError.of("invalid_client", "Malformed HTTP Basic credentials.", 401)
          let basicId: string
          try {
            basicId = decodeURIComponent(decoded.slice(0, colon))
            secret = decodeURIComponent(decoded.slice(colon + 1))
          } catch {
            return yield* OAuthError.of("invalid_client", "Malformed HTTP Basic credentials.", 401)
          }
          if (form.has("client_secret")) {
            return yield* OAuthError.of("invalid_request", "Send the client secret once: HTTP Basic or the form.")
          }
          if (id !== undefined && id !== basicId) {
            return yield* OAuthError.of("invalid_request", "`client_id` differs from the HTTP Basic credentials'.")
          }
          id = basicId
          basic = true
        }
        if (id === undefined) return yield* OAuthError.of("invalid_client", "Name the client: `client_id`.", 401)
        const client = yield* resolve(id).pipe(
          Effect.mapError((e) => OAuthError.of("invalid_client", e.description, 401))
        )
        if (client.auth_method === "none") return client
        const expected = client.auth_method === "client_secret_basic" ? basic : !basic
        if (
          !expected || secret === undefined || client.secret_hash === null ||
          !sameSecret(hashOf(secret).toString("hex"), Buffer.from(client.secret_hash).toString("hex"))
        ) {
          return yield* new OAuthError({
            error: "invalid_client",
            description: "Client authentication failed.",
            status: 401,
            failedClientId: client.id
          })
        }
        return client
      })

    return { register, resolve, authenticate } as const
  }),
  dependencies: [OAuthRepo.Default]
}) {}
