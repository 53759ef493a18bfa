import { ConfigProvider, Duration, Effect, Layer, Logger, LogLevel } from "effect"
import * as Crypto from "node:crypto"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SwitchyardConfig } from "../../src/config/SwitchyardConfig.js"
import { DatabaseLive } from "../../src/db/Database.js"
import { sweepExpired } from "../../src/security/ExpiredRows.js"
import { initialize, mcpPost, obtainTokens, REDIRECT_URI, signedUpAdmin, token } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
let db: pg.Pool
let orgA: Awaited<ReturnType<typeof signedUpAdmin>>
let orgB: Awaited<ReturnType<typeof signedUpAdmin>>
beforeAll(async () => {
  node = await startTestNode()
  db = new pg.Pool({ connectionString: node.databaseUrl, max: 2 })
  orgA = await signedUpAdmin(node)
  orgB = await signedUpAdmin(node)
})
afterAll(async () => {
  await db?.end()
  await node?.stop()
})

const hash = (secret: string) => Crypto.hash("sha256", secret, "buffer")

/** One sweep, as a node's periodic one runs it (idle MCP sessions go after 30 days, the default). */
const sweep = () =>
  Effect.runPromise(
    sweepExpired(Duration.days(30)).pipe(
      Effect.provide(DatabaseLive.pipe(Layer.provideMerge(SwitchyardConfig.layer))),
      Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", node.databaseUrl]])))
    )
  )

const exists = async (table: string, key: string, value: Buffer) =>
  (await db.query(`SELECT 1 FROM ${table} WHERE ${key} = $1`, [value])).rowCount === 1

const age = (table: string, column: string, key: string, value: Buffer, interval: string) =>
  db.query(`UPDATE ${table} SET ${column} = now() - $2::interval WHERE ${key} = $1`, [value, interval])

const ping = (accessToken: string) => mcpPost(node.baseUrl, initialize, { authorization: `Bearer ${accessToken}` })

const replay = (flow: Awaited<ReturnType<typeof obtainTokens>>) =>
  token(node, {
    grant_type: "authorization_code",
    code: flow.code,
    code_verifier: flow.verifier,
    client_id: flow.client.client_id,
    redirect_uri: REDIRECT_URI
  })

describe("the sweep of expired sign-in and OAuth rows", () => {
  it("deletes codes and tokens a day past expiry; live ones, those within the day and other orgs' stay", async () => {
    const old = await obtainTokens(node, orgA.email)
    const recent = await obtainTokens(node, orgA.email)
    const other = await obtainTokens(node, orgB.email)
    await age("oauth_codes", "expires_at", "code_hash", hash(old.code), "25 hours")
    await age("oauth_tokens", "expires_at", "token_hash", hash(old.tokens.access_token), "25 hours")
    await age("oauth_tokens", "expires_at", "token_hash", hash(old.tokens.refresh_token), "25 hours")
    await age("oauth_codes", "expires_at", "code_hash", hash(recent.code), "23 hours")
    await age("oauth_tokens", "expires_at", "token_hash", hash(recent.tokens.access_token), "23 hours")

    await sweep()

    expect(await exists("oauth_codes", "code_hash", hash(old.code))).toBe(false)
    expect(await exists("oauth_tokens", "token_hash", hash(old.tokens.access_token))).toBe(false)
    expect(await exists("oauth_tokens", "token_hash", hash(old.tokens.refresh_token))).toBe(false)
    for (const secret of [recent.tokens.access_token, recent.tokens.refresh_token, other.tokens.access_token]) {
      expect(await exists("oauth_tokens", "token_hash", hash(secret))).toBe(true)
    }
    expect(await exists("oauth_codes", "code_hash", hash(recent.code))).toBe(true)
    expect(await exists("oauth_codes", "code_hash", hash(other.code))).toBe(true)
    // the other organization's authorization works as before, and the grants themselves are kept
    expect((await ping(other.tokens.access_token)).status).toBe(200)
    const grants = await db.query(
      "SELECT count(*)::int AS n FROM oauth_grants WHERE client_id = ANY($1)",
      [[old.client.client_id, recent.client.client_id]]
    )
    expect(grants.rows[0].n).toBe(2)
  })

  it("keeps a used code through the grace: its replay is refused and revokes what it issued", async () => {
    const flow = await obtainTokens(node, orgA.email)
    expect((await ping(flow.tokens.access_token)).status).toBe(200)
    // expired an hour ago: past its use, within the grace
    await age("oauth_codes", "expires_at", "code_hash", hash(flow.code), "1 hour")
    await sweep()
    const again = await replay(flow)
    expect(again).toMatchObject({ status: 400, body: { error: "invalid_grant" } })
    expect(again.body.error_description).toContain("already presented")
    expect((await ping(flow.tokens.access_token)).status).toBe(401)
  })

  it("a code swept past the grace is refused as unknown", async () => {
    const flow = await obtainTokens(node, orgA.email)
    await age("oauth_codes", "expires_at", "code_hash", hash(flow.code), "2 days")
    await sweep()
    expect(await replay(flow)).toMatchObject({
      status: 400,
      body: { error: "invalid_grant", error_description: "Unknown authorization code." }
    })
  })

  it("keeps a rotated-out refresh token until it expires: its reuse still revokes the family", async () => {
    const flow = await obtainTokens(node, orgA.email)
    const rotated = await token(node, {
      grant_type: "refresh_token",
      refresh_token: flow.tokens.refresh_token,
      client_id: flow.client.client_id
    })
    expect(rotated.status).toBe(200)
    // long used, not yet expired
    await age("oauth_tokens", "used_at", "token_hash", hash(flow.tokens.refresh_token), "20 days")
    await sweep()
    expect(await exists("oauth_tokens", "token_hash", hash(flow.tokens.refresh_token))).toBe(true)
    const reused = await token(node, {
      grant_type: "refresh_token",
      refresh_token: flow.tokens.refresh_token,
      client_id: flow.client.client_id
    })
    expect(reused).toMatchObject({ status: 400, body: { error: "invalid_grant" } })
    expect((await ping(rotated.body.access_token)).status).toBe(401)
  })

  it("deletes expired console sessions and SSO sign-ins in flight, ended and long-idle MCP sessions", async () => {
    const flow = await obtainTokens(node, orgB.email)
    const sessions: Array<Buffer> = []
    for (let i = 0; i < 4; i++) {
      const answer = await ping(flow.tokens.access_token)
      expect(answer.status).toBe(200)
      sessions.push(hash(answer.headers.get("mcp-session-id")!))
    }
    const [live, endedRecently, endedLong, idle] = sessions as [Buffer, Buffer, Buffer, Buffer]
    await age("mcp_sessions", "ended_at", "id_hash", endedRecently, "1 hour")
    await age("mcp_sessions", "ended_at", "id_hash", endedLong, "25 hours")
    await age("mcp_sessions", "last_seen_at", "id_hash", idle, "31 days")

    const [liveWeb, expiredWeb, liveLogin, expiredLogin] = [0, 1, 2, 3].map(() => Crypto.randomBytes(32))
    for (const [id, ttl] of [[liveWeb, "1 hour"], [expiredWeb, "-1 minute"]] as const) {
      await db.query(
        "INSERT INTO web_sessions (id_hash, user_id, expires_at) VALUES ($1, $2, now() + $3::interval)",
        [id, orgA.user_id, ttl]
      )
    }
    for (const [state, organization, ttl] of [[liveLogin, orgA, "10 minutes"], [expiredLogin, orgB, "-1 minute"]]) {
      await db.query(
        `INSERT INTO sso_logins (state_hash, browser_hash, organization_id, code_verifier, nonce, request, expires_at)
         VALUES ($1, $1, $2, 'v', 'n', '{}', now() + $3::interval)`,
        [state, (organization as typeof orgA).organization_id, ttl]
      )
    }

    await sweep()

    expect(await exists("mcp_sessions", "id_hash", live)).toBe(true)
    expect(await exists("mcp_sessions", "id_hash", endedRecently)).toBe(true)
    expect(await exists("mcp_sessions", "id_hash", endedLong)).toBe(false)
    expect(await exists("mcp_sessions", "id_hash", idle)).toBe(false)
    expect(await exists("web_sessions", "id_hash", liveWeb)).toBe(true)
    expect(await exists("web_sessions", "id_hash", expiredWeb)).toBe(false)
    expect(await exists("sso_logins", "state_hash", liveLogin)).toBe(true)
    expect(await exists("sso_logins", "state_hash", expiredLogin)).toBe(false)
  })

  it("goes in batches, and two nodes sweeping at once share the rows without error", async () => {
    await db.query(
      `INSERT INTO sso_logins (state_hash, browser_hash, organization_id, code_verifier, nonce, request, expires_at)
       SELECT sha256(('stale-' || i)::bytea), '\\x00', $1, 'v', 'n', '{}', now() - interval '1 minute'
       FROM generate_series(1, 2500) i`,
      [orgA.organization_id]
    )
    const [one, two] = await Promise.all([sweep(), sweep()])
    expect(one + two).toBeGreaterThanOrEqual(2500)
    const left = await db.query("SELECT count(*)::int AS n FROM sso_logins WHERE expires_at < now()")
    expect(left.rows[0].n).toBe(0)
  })
})
