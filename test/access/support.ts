import pg from "pg"
import { expect } from "vitest"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { eventually } from "../support/Poll.js"
import type { TestNode } from "../support/TestNode.js"

let counter = 0
export const uniqueEmail = (prefix = "person") =>
  `${prefix}-${Date.now()}-${++counter}-${Math.random().toString(36).slice(2, 6)}@example.com`

export const call = async (node: TestNode, apiKey: string, method: string, path: string, body?: unknown) => {
  const response = await node.fetch(path, {
    method,
    apiKey,
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  })
  const text = await response.text()
  const isJson = /json/.test(response.headers.get("content-type") ?? "")
  return {
    status: response.status,
    headers: response.headers,
    body: text === "" ? undefined : isJson && !path.includes("format=ndjson") ? JSON.parse(text) : text
  }
}

/** Expects our one error shape with this status and code. */
export const expectError = (
  r: { status: number; headers: Headers; body: any },
  status: number,
  code: string
) => {
  expect({ status: r.status, code: r.body?.error?.code }).toEqual({ status, code })
  expect(r.body.error.request_id).toBe(r.headers.get("x-request-id"))
  expect(typeof r.body.error.message).toBe("string")
  expect(r.headers.get("x-switchyard-error")).toBe("true")
}

/**
 * A keyset list read page by page with `limit`, following `next_cursor` to the end: the ids (`idOf`) in the
 * order served, and each page's `total` (every page must answer 200, with at most `limit` items).
 */
export const pageThrough = async (
  node: TestNode,
  apiKey: string,
  path: string,
  limit: number,
  idOf: (item: any) => string = (item) => item.id
) => {
  const ids: Array<string> = []
  const totals: Array<number> = []
  let cursor: string | null = null
  do {
    const query = `${path.includes("?") ? "&" : "?"}limit=${limit}${cursor === null ? "" : `&cursor=${cursor}`}`
    const page: Awaited<ReturnType<typeof call>> = await call(node, apiKey, "GET", `${path}${query}`)
    expect(page.status, JSON.stringify(page.body)).toBe(200)
    expect(page.body.items.length).toBeLessThanOrEqual(limit)
    ids.push(...page.body.items.map(idOf))
    totals.push(page.body.total)
    cursor = page.body.next_cursor
  } while (cursor !== null)
  return { ids, totals }
}

/** A new member with this role and their personal key. */
export const addMember = async (node: TestNode, adminKey: string, role: string) => {
  const email = uniqueEmail(role)
  const added = await call(node, adminKey, "POST", "/v1/members", { email, role })
  if (added.status !== 201) throw new Error(`add member: ${added.status} ${JSON.stringify(added.body)}`)
  const key = await call(node, adminKey, "POST", "/v1/api-keys", { name: `${role} key`, user_id: added.body.user.id })
  if (key.status !== 201) throw new Error(`key: ${key.status} ${JSON.stringify(key.body)}`)
  return { userId: added.body.user.id as string, email, key: key.body.api_key as string, keyId: key.body.id as string }
}

export const orgKey = async (node: TestNode, adminKey: string, role: string) => {
  const key = await call(node, adminKey, "POST", "/v1/api-keys", { name: `org ${role}`, kind: "organization", role })
  if (key.status !== 201) throw new Error(`org key: ${key.status} ${JSON.stringify(key.body)}`)
  return { key: key.body.api_key as string, keyId: key.body.id as string }
}

export const scriptedAgent = (name = "Helper") => ({
  name,
  model: { provider: "scripted", script: [{ text: "hello" }] }
})

/** An organization with one of each resource the access rules guard. */
export const makeWorld = async (node: TestNode, name?: string) => {
  const org = await node.bootstrap(name)
  const admin = org.api_key
  const agent = (await call(node, admin, "POST", "/v1/agents", scriptedAgent())).body
  const connector = await createConnector(node, admin, petstore("https://pets.example.com"))
  const connection = await createConnection(node, admin, connector.id, {
    name: "pets",
    credentials: { type: "api_key", value: "k" }
  })
  const group = (await call(node, admin, "POST", "/v1/groups", { name: `Team ${++counter}` })).body
  const person = await addMember(node, admin, "member")
  await call(node, admin, "POST", `/v1/groups/${group.id}/members`, { user_id: person.userId })
  return { org, admin, agent, connector, connection, group, person }
}
export type World = Awaited<ReturnType<typeof makeWorld>>

/** Direct SQL on the node's database, for what the API must not allow (tampering, counting). */
export const withDatabase = async <A>(node: TestNode, f: (client: pg.Client) => Promise<A>) => {
  const client = new pg.Client({ connectionString: node.databaseUrl })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

export const auditEvents = (node: TestNode, organizationId: string) =>
  withDatabase(node, async (db) =>
    (await db.query(
      "SELECT seq::int AS seq, action, actor_type, actor_id, actor_key_id, targets, outcome, ip, user_agent, " +
        "request_id, details FROM audit_events WHERE organization_id = $1 ORDER BY seq",
      [organizationId]
    )).rows)

/** Waits until `n` requests wait on a row lock in a statement naming `table`. */
export const waitingOn = (node: TestNode, table: string, n: number) =>
  eventually(
    async () =>
      (await withDatabase(node, (probe) =>
          probe.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1",
            [`%${table}%`]
          ))).rows[0].n >= n || undefined,
    10_000,
    `${n} requests to wait on a row of ${table}`
  )

/**
 * The requests made at once: the row `id` of `table` is held (`FOR UPDATE`, in another connection) until each
 * waits on it, so all are in before any writes. Each is started once the one before waits: PostgreSQL then
 * hands them the row in that order. Their answers, in order.
 */
export const atOnce = <A>(node: TestNode, table: string, id: string, requests: ReadonlyArray<() => Promise<A>>) =>
  withDatabase(node, async (db) => {
    await db.query("BEGIN")
    await db.query(`SELECT id FROM ${table} WHERE id = $1 FOR UPDATE`, [id])
    const started: Array<Promise<A>> = []
    for (const request of requests) {
      started.push(request())
      await waitingOn(node, table, started.length)
    }
    await db.query("COMMIT")
    return Promise.all(started)
  })
