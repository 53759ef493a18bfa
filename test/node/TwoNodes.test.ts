import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bootstrapOrg } from "../support/Bootstrap.js"
import { type NodeProcess, spawnNode } from "../support/NodeProcess.js"
import { freePort } from "../support/ports.js"
import { migratedDatabase } from "../support/TestDatabase.js"
import { testEnvironment } from "../support/TestNode.js"

let nodes: Array<NodeProcess> = []
let shared: Record<string, string>
beforeAll(async () => {
  shared = await testEnvironment({ DATABASE_URL: await migratedDatabase() })
  nodes = [spawnNode(shared)]
  // the second node: same database, its own HTTP and runner ports, started while the first starts
  nodes.push(
    spawnNode({
      ...shared,
      SWITCHYARD_HTTP_PORT: String(await freePort()),
      SWITCHYARD_RUNNER_PORT: String(await freePort())
    })
  )
  await Promise.all(nodes.map((n) => n.waitReady()))
})
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
})

describe("two nodes on one database", () => {
  it("spread the shards between them", async () => {
    const deadline = Date.now() + 30_000
    let owned: Array<number> = []
    while (Date.now() < deadline) {
      const reports = await Promise.all(nodes.map((n) => fetch(`${n.baseUrl}/readyz`).then((r) => r.json())))
      owned = reports.map((r) => r.shards_owned ?? 0)
      if (owned.every((n) => n > 0) && owned[0]! + owned[1]! === 300) break
      await new Promise((r) => setTimeout(r, 250))
    }
    expect(owned.every((n) => n > 0)).toBe(true)
    expect(owned[0]! + owned[1]!).toBe(300)
  })

  it("serve the same organizations: a key made through one works on the other", async () => {
    const { api_key } = await bootstrapOrg(shared, "Shared", "two@nodes.test")
    const key = await fetch(`${nodes[0]!.baseUrl}/v1/api-keys`, {
      method: "POST",
      headers: { "x-api-key": api_key, "content-type": "application/json" },
      body: JSON.stringify({ name: "made on node 1" })
    }).then((r) => r.json())
    const me = await fetch(`${nodes[1]!.baseUrl}/v1/me`, { headers: { "x-api-key": key.api_key } })
    expect(me.status).toBe(200)
    expect((await me.json()).key.name).toBe("made on node 1")
  })

  it("wake long polls on both nodes when a task ends, whichever node ran it", async () => {
    const created = await bootstrapOrg(shared, "Waiters", "waiters@nodes.test")
    const headers = { "x-api-key": created.api_key, "content-type": "application/json" }
    const agent = await fetch(`${nodes[0]!.baseUrl}/v1/agents`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        name: "one second",
        model: { provider: "scripted", script: [{ text: "done", delay_ms: 1000 }] }
      })
    }).then((r) => r.json())
    // a waiter on the node that ends the task is handed the outcome; one on the other node hears a notice,
    // well before its 5 s re-read would find the end. Several tasks (at once), so that both nodes run some.
    await Promise.all(Array.from({ length: 4 }, async (_, i) => {
      const accepted = await fetch(`${nodes[0]!.baseUrl}/v1/agents/${agent.id}/invoke?asynchronous=true`, {
        method: "POST",
        headers,
        body: JSON.stringify({ input: { text: `task ${i}`, user: { id: "u", email: "u@nodes.test" } } })
      }).then((r) => r.json())
      const answers = await Promise.all(nodes.map(async (n) => {
        const started = Date.now()
        const task = await fetch(`${n.baseUrl}/v1/tasks/${accepted.id}?wait=30`, { headers }).then((r) => r.json())
        return { status: task.status, ms: Date.now() - started }
      }))
      for (const answer of answers) {
        expect(answer.status).toBe("completed")
        expect(answer.ms).toBeLessThan(4500)
      }
    }))
  })

  it("answer an async invoke before the task ends, also when the other node runs it", async () => {
    const created = await bootstrapOrg(shared, "Async", "async@nodes.test")
    const headers = { "x-api-key": created.api_key, "content-type": "application/json" }
    const agent = await fetch(`${nodes[0]!.baseUrl}/v1/agents`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        name: "a second and a half",
        model: { provider: "scripted", script: [{ text: "done", delay_ms: 1500 }] }
      })
    }).then((r) => r.json())
    // eight tasks invoked on one node: the other node runs about half of them. A delivery to the other node
    // used to wait for the run's end, so the 202 came with the task already completed.
    const seen = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
      const accepted = await fetch(`${nodes[0]!.baseUrl}/v1/agents/${agent.id}/invoke?asynchronous=true`, {
        method: "POST",
        headers,
        body: JSON.stringify({ input: { text: `task ${i}`, user: { id: "u", email: "u@nodes.test" } } })
      })
      expect(accepted.status).toBe(202)
      const { id } = await accepted.json()
      const right = await fetch(`${nodes[0]!.baseUrl}/v1/tasks/${id}`, { headers }).then((r) => r.json())
      const ended = await fetch(`${nodes[1]!.baseUrl}/v1/tasks/${id}?wait=30`, { headers }).then((r) => r.json())
      return { right: right.status, ended: ended.status }
    }))
    for (const { ended, right } of seen) {
      expect(["pending", "executing"]).toContain(right)
      expect(ended).toBe("completed")
    }
  })

  it("hand shards over when one stops", async () => {
    await nodes[1]!.stop()
    const deadline = Date.now() + 30_000
    let owned = 0
    while (Date.now() < deadline) {
      owned = (await fetch(`${nodes[0]!.baseUrl}/readyz`).then((r) => r.json())).shards_owned ?? 0
      if (owned === 300) break
      await new Promise((r) => setTimeout(r, 250))
    }
    expect(owned).toBe(300)
  })
})
