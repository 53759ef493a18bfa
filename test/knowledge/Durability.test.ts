import { afterAll, describe, expect, it } from "vitest"
import { call, withDatabase } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { addDocument, createBase, settled } from "./support.js"

const started: Array<TestNode> = []
const start = async (env: Record<string, string>) => {
  const node = await startTestNode(env)
  started.push(node)
  return node
}
afterAll(async () => {
  for (const node of started) await node.stop().catch(() => undefined)
})

describe("the ingestion queue is PostgreSQL's, not a node's", () => {
  it("documents queued on a node that stops, one of them leased by a node that died, are ingested by the next", async () => {
    const first = await start({ SWITCHYARD_KNOWLEDGE_WORKERS: "0" })
    const key = (await first.bootstrap()).api_key
    const base = await createBase(first, key, { name: "Queued" })
    const docs: Array<any> = []
    for (const n of [1, 2, 3]) {
      docs.push(await addDocument(first, key, base.id, { name: `d${n}.md`, text: `# Part ${n}\n\nquokka ${n}` }))
    }
    await new Promise((r) => setTimeout(r, 1500))
    const waiting = await call(first, key, "GET", `/v1/knowledge-bases/${base.id}/documents`)
    expect(waiting.body.items.map((d: any) => d.status)).toEqual(["processing", "processing", "processing"])
    // as if a node had claimed the first and died: its lease runs out in 2 s
    await withDatabase(first, (db) =>
      db.query(
        "UPDATE knowledge_ingest_queue SET leased_until = now() + interval '2 seconds', attempts = 1 WHERE document_id = $1",
        [docs[0].id]
      ))
    await first.stop()

    const second = await start({ DATABASE_URL: first.databaseUrl })
    for (const doc of docs) {
      const done = await settled(second, key, base.id, doc.id)
      expect(done).toMatchObject({ status: "ready", chunk_count: 1, progress: 1 })
    }
    const left = await withDatabase(second, async (db) => ({
      queue: (await db.query("SELECT count(*)::int AS n FROM knowledge_ingest_queue")).rows[0].n,
      sources: (await db.query("SELECT count(*)::int AS n FROM knowledge_document_sources")).rows[0].n
    }))
    expect(left).toEqual({ queue: 0, sources: 0 })
  })

  it("two nodes on one database share the queue: every document is ingested once", async () => {
    const a = await start({})
    const b = await start({ DATABASE_URL: a.databaseUrl })
    const key = (await a.bootstrap()).api_key
    const base = await createBase(a, key, { name: "Shared" })
    const added = await Promise.all(
      Array.from(
        { length: 40 },
        (_, n) =>
          addDocument(n % 2 === 0 ? a : b, key, base.id, { name: `n${n}.txt`, text: `wombat ${n}\n\nsecond paragraph` })
      )
    )
    for (const doc of added) expect((await settled(b, key, base.id, doc.id)).status).toBe("ready")
    const chunks = await withDatabase(a, async (db) =>
      (await db.query(
        "SELECT document_id, count(*)::int AS n FROM knowledge_chunks WHERE knowledge_base_id = $1 GROUP BY 1",
        [base.id]
      )).rows)
    expect(chunks).toHaveLength(40)
    expect(chunks.every((r: any) => r.n === 1)).toBe(true)
  })
})
