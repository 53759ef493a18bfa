import { SqlClient } from "@effect/sql"
import { Duration, Effect, Layer } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { everyJittered } from "../support/Periodic.js"

/**
 * How long a used or expired OAuth code or token is remembered past its expiry. A row that is gone is refused as
 * unknown, but only a row still there is recognized as a replay, and a replay revokes what was issued from it
 * (as OAuth 2.1 asks of a code used twice and of a rotated-out refresh token). Codes live 5 minutes and a
 * stolen one is replayed within them; a rotated-out refresh token is kept until it expires anyway, so its reuse
 * is caught as long as it could have worked. The day past that is a margin, not a promise.
 */
export const REPLAY_GRACE = Duration.days(1)
/** How often each node sweeps (jittered): these rows grow with sign-ins and refreshes, slowly; one wake an hour. */
export const SWEEP_EVERY = Duration.hours(1)
/** The first sweep after a node starts comes within this: a node restarted every half hour sweeps too. */
const FIRST_WITHIN = Duration.minutes(10)
/** Rows deleted per statement, so a backlog (a first run after an upgrade) never holds long locks. */
const BATCH = 1000

/**
 * Short-lived security rows, each deleted once it can no longer be used nor tell anything (its reason):
 *   - `oauth_codes`, `oauth_tokens` (access and refresh): REPLAY_GRACE after their expiry (a revoked access
 *     token's expiry is its revocation; a refresh token's grant may be revoked, the token is kept to expiry).
 *   - `web_sessions` (console sign-ins), `sso_logins` (sign-ins in flight), `connection_authorizations`
 *     (connector OAuth flows in flight): once expired; they are refused from then on, and a replay of them
 *     revokes nothing.
 *   - `mcp_sessions`: REPLAY_GRACE after their end, or once unused for the refresh token lifetime (the MCP
 *     client is told 404 and opens a new session, as the MCP transport requires it to).
 * OAuth grants stay: tasks name the grant that invoked them, and people see their revoked authorizations.
 */
const statements = (idleSessions: Duration.Duration) => {
  const grace = Duration.toSeconds(REPLAY_GRACE)
  const idle = Duration.toSeconds(idleSessions)
  const batch = (table: string, key: string, where: string) =>
    // SKIP LOCKED: two nodes sweeping at once take different rows, and neither waits on a row in use
    `WITH d AS (
      DELETE FROM ${table} WHERE ${key} IN (
        SELECT ${key} FROM ${table} WHERE ${where} LIMIT ${BATCH} FOR UPDATE SKIP LOCKED
      ) RETURNING 1
    ) SELECT count(*)::int AS n FROM d`
  return [
    batch("oauth_codes", "code_hash", `expires_at < now() - make_interval(secs => ${grace})`),
    batch("oauth_tokens", "token_hash", `expires_at < now() - make_interval(secs => ${grace})`),
    batch("web_sessions", "id_hash", "expires_at < now()"),
    batch("sso_logins", "state_hash", "expires_at < now()"),
    batch("connection_authorizations", "state_hash", "expires_at < now()"),
    batch(
      "mcp_sessions",
      "id_hash",
      `ended_at < now() - make_interval(secs => ${grace}) OR last_seen_at < now() - make_interval(secs => ${idle})`
    )
  ]
}

/**
 * One sweep: every table, a batch at a time until a batch comes back short; how many rows went. Safe on any
 * number of nodes at once (a row is deleted once, locked rows are left for the next pass).
 */
export const sweepExpired = (idleSessions: Duration.Duration) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let total = 0
    for (const statement of statements(idleSessions)) {
      for (;;) {
        const [row] = yield* sql.unsafe<{ readonly n: number }>(statement)
        const n = row?.n ?? 0
        total += n
        if (n < BATCH) break
      }
    }
    return total
  })

/** The sweep on this node, every SWEEP_EVERY (jittered); the first within FIRST_WITHIN of its start. */
export const ExpiredRowsLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    yield* everyJittered(
      SWEEP_EVERY,
      "sweep of expired sign-in and OAuth rows",
      sweepExpired(config.oauthRefreshTokenTtl).pipe(
        Effect.tap((n) => n > 0 ? Effect.logInfo(`deleted ${n} expired sign-in and OAuth row(s)`) : Effect.void),
        // hourly on every node: not a root span in the operator's traces
        Effect.withTracerEnabled(false)
      ),
      FIRST_WITHIN
    ).pipe(Effect.forkScoped)
  })
)
