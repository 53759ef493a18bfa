import * as Http from "node:http"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bootstrapOrg } from "../support/Bootstrap.js"
import { type NodeProcess, spawnNode } from "../support/NodeProcess.js"
import { freePort } from "../support/ports.js"
import { migratedDatabase } from "../support/TestDatabase.js"
import { testEnvironment } from "../support/TestNode.js"

/**
 * Two nodes. A task runs on the node that accepted it; a `?wait=` long poll of it sent to the other node is
 * handed to the running node over the wait channel between them (src/http/WaitChannel.ts), which answers
 * from memory: the asking node registers nothing in the task's row (issue 20). A running node that cannot be
 * reached leaves the poll to the asking node. Only a node that shows the cluster's token opens a channel.
 */
let nodes: Array<NodeProcess> = []
let env: Record<string, string>
let headers: Record<string, string>
let db: pg.Client
let agentId: string

const query = async <R extends pg.QueryResultRow>(text: string, values: Array<unknown> = []) =>
  (await db.query<R>(text, values)).rows

beforeAll(async () => {
  env = await testEnvironment({ DATABASE_URL: await migratedDatabase() })
  const second = {
    ...env,
    SWITCHYARD_HTTP_PORT: String(await freePort()),
    SWITCHYARD_RUNNER_PORT: String(await freePort())
  }
  nodes = [spawnNode(env), spawnNode(second)]
  // the organization is made while the nodes start
  const created = bootstrapOrg(env, "Waits", "waits@nodes.test")
  await Promise.all(nodes.map((n) => n.waitReady()))
  db = new pg.Client({ connectionString: env.DATABASE_URL })
  await db.connect()
  // both nodes hold shards, and each knows the other's
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    const rows = await query<{ n: number; shards: number }>(
      "SELECT count(*)::int AS n, coalesce(sum(cardinality(shards)), 0)::int AS shards FROM shard_directory"
    )
    if (rows[0]!.n === 2 && rows[0]!.shards === 300) break
    await new Promise((r) => setTimeout(r, 250))
  }
  await new Promise((r) => setTimeout(r, 1500))
  headers = { "x-api-key": (await created).api_key, "content-type": "application/json" }
  agentId = await createAgent("slow", "done", 400)
  // the fast path (where a poll is handed on) takes keys the node verified lately
  expect((await fetch(`${nodes[1]!.baseUrl}/v1/me`, { headers })).status).toBe(200)
}, 150_000)

afterAll(async () => {
  await db?.end()
  await Promise.all(nodes.map((n) => n.stop()))
})

/** A scripted agent that answers `text` after `delayMs`. */
const createAgent = async (name: string, text: string, delayMs: number) =>
  (await fetch(`${nodes[0]!.baseUrl}/v1/agents`, {
    method: "POST",
    headers,
    body: JSON.stringify({ name, model: { provider: "scripted", script: [{ text, delay_ms: delayMs }] } })
  }).then((r) => r.json())).id as string

const invokeOnFirst = async (agent = agentId) => {
  const accepted = await fetch(`${nodes[0]!.baseUrl}/v1/agents/${agent}/invoke?asynchronous=true`, {
    method: "POST",
    headers,
    body: JSON.stringify({ input: { text: "go", user: { id: "u", email: "u@example.com" } } })
  }).then((r) => r.json())
  // it runs where it was accepted: on a shard the first node holds
  const [row] = await query<{ mine: boolean }>(
    "SELECT t.shard = ANY(d.shards) AS mine FROM tasks t, shard_directory d WHERE t.id = $1 AND d.url = $2",
    [accepted.id, nodes[0]!.baseUrl]
  )
  expect(row?.mine).toBe(true)
  return accepted.id as string
}

const waitOnSecond = async (taskId: string, extra: Record<string, string> = {}) => {
  const response = await fetch(`${nodes[1]!.baseUrl}/v1/tasks/${taskId}?wait=20`, { headers: { ...headers, ...extra } })
  return { status: response.status, body: await response.json(), requestId: response.headers.get("x-request-id") }
}

const waitersOf = async (taskId: string) =>
  (await query<{ waiters: Array<string> | null }>("SELECT waiters FROM tasks WHERE id = $1", [taskId]))[0]!.waiters

describe("a long poll on a node that does not run the task", () => {
  it("is answered by the running node: the task ends in the answer, and nothing is registered in its row", async () => {
    const taskId = await invokeOnFirst()
    const answer = await waitOnSecond(taskId)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ id: taskId, status: "completed", result: "done" })
    expect(answer.requestId).toBeTruthy()
    expect(await waitersOf(taskId)).toBeNull()

    // the same poll, not handed on (as the running node takes a handed-on one), registers and is woken
    const other = await invokeOnFirst()
    const direct = await waitOnSecond(other, { "x-switchyard-forwarded": "1" })
    expect(direct.body).toMatchObject({ id: other, status: "completed" })
    expect((await waitersOf(other))?.length).toBe(1)
  })

  it("an error of the running node comes back as it is", async () => {
    const missing = "01900000-0000-7000-8000-000000000000"
    const response = await fetch(`${nodes[1]!.baseUrl}/v1/tasks/${missing}?wait=5`, { headers })
    expect(response.status).toBe(404)
    expect((await response.json()).error.code).toBe("not_found")
  })

  it("when the running node cannot be reached, the asking node answers the poll itself", async () => {
    // a directory entry, newer than the live one, that sends every shard to a port nobody listens on
    const dead = `http://127.0.0.1:${await freePort()}`
    await query(
      "INSERT INTO shard_directory (url, shards, seen_at) VALUES ($1, ARRAY(SELECT generate_series(1, 300)), now() + interval '1 hour')",
      [dead]
    )
    try {
      await new Promise((r) => setTimeout(r, 2500))
      const taskId = await invokeOnFirst()
      const answer = await waitOnSecond(taskId)
      expect(answer.body).toMatchObject({ id: taskId, status: "completed", result: "done" })
    } finally {
      await query("DELETE FROM shard_directory WHERE url = $1", [dead])
    }
  })

  it("travel on a channel that only a node of the cluster opens: a wrong or missing token is refused", async () => {
    const upgrade = (token: string | undefined) =>
      new Promise<number>((resolve, reject) => {
        const url = new URL(nodes[0]!.baseUrl)
        const request = Http.request({
          host: url.hostname,
          port: Number(url.port),
          path: "/internal/waits",
          headers: {
            connection: "Upgrade",
            upgrade: "switchyard-waits",
            ...(token === undefined ? {} : { "x-switchyard-cluster": token })
          }
        })
        request.once("upgrade", (res, socket) => {
          socket.destroy()
          resolve(res.statusCode!)
        })
        request.once("response", (res) => {
          res.resume()
          resolve(res.statusCode!)
        })
        request.once("error", reject)
        request.end()
      })
    expect(await upgrade("not-the-token")).toBe(403)
    expect(await upgrade(undefined)).toBe(403)
    // and the handed-on polls still work after the refusals
    const taskId = await invokeOnFirst()
    expect((await waitOnSecond(taskId)).body).toMatchObject({ id: taskId, status: "completed" })
  })

  // last: it stops the first node
  it("a poll held for a task on a node that stops is answered all the same", async () => {
    const taskId = await invokeOnFirst(await createAgent("slower", "late", 2500))
    const answer = waitOnSecond(taskId)
    await new Promise((r) => setTimeout(r, 500))
    // the first node drains: it closes its wait channels, finishes the task within its grace, and stops
    const stopped = nodes[0]!.stop()
    expect((await answer).body).toMatchObject({ id: taskId, status: "completed", result: "late" })
    expect(await stopped).toBe(0)
  })
})
