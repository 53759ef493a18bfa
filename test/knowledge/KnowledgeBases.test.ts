import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call, expectError, withDatabase } from "../access/support.js"
import { uploaded } from "../files/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { addDocument, createBase, pdfOf, ready, search, settled } from "./support.js"

let node: TestNode
let admin: string
let organizationId: string
beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_MAX_DOCUMENT_BYTES: String(200_000) })
  const org = await node.bootstrap()
  admin = org.api_key
  organizationId = org.organization_id
})
afterAll(() => node?.stop())

const handbook = `# Handbook

Welcome to the company. This handbook explains how we work.

## Leave

Every employee gets thirty days of paid vacation per year. Unused vacation days carry over until March.

### Sick leave

Report sick leave to your manager before nine in the morning.

## Travel

Book trains for trips under six hours; flights need approval from finance.
`

describe("knowledge bases over REST", () => {
  it("create, list with a cursor, get, rename, change language and delete a base; each change audited", async () => {
    const first = await createBase(node, admin, { name: "Policies", description: "HR policies" })
    expect(first).toMatchObject({
      name: "Policies",
      description: "HR policies",
      language: "english",
      document_count: 0
    })
    const second = await createBase(node, admin, { name: "Notizen", language: "german" })
    const third = await createBase(node, admin, { name: "Raw", language: "simple" })

    const page1 = await call(node, admin, "GET", "/v1/knowledge-bases?limit=2")
    expect(page1.body.items.map((b: any) => b.id)).toEqual([first.id, second.id])
    const page2 = await call(node, admin, "GET", `/v1/knowledge-bases?limit=2&cursor=${page1.body.next_cursor}`)
    expect(page2.body).toEqual({ items: [third], next_cursor: null })

    expect((await call(node, admin, "GET", `/v1/knowledge-bases/${first.id}`)).body).toEqual(first)
    const changed = await call(node, admin, "PATCH", `/v1/knowledge-bases/${third.id}`, {
      name: "Raw notes",
      language: "english"
    })
    expect(changed.status).toBe(200)
    expect(changed.body).toMatchObject({ name: "Raw notes", language: "english", description: "" })

    expect((await call(node, admin, "DELETE", `/v1/knowledge-bases/${third.id}`)).status).toBe(204)
    expectError(await call(node, admin, "GET", `/v1/knowledge-bases/${third.id}`), 404, "not_found")

    const actions = (await auditEvents(node, organizationId))
      .filter((e: any) => e.targets.some((t: any) => t.id === third.id))
      .map((e: any) => e.action)
    expect(actions).toEqual(["CREATE_KNOWLEDGE_BASE", "UPDATE_KNOWLEDGE_BASE", "DELETE_KNOWLEDGE_BASE"])
  })

  it("refuses a language PostgreSQL has no text search configuration for, a taken name, and bad fields", async () => {
    const bad = await call(node, admin, "POST", "/v1/knowledge-bases", { name: "X", language: "klingon" })
    expectError(bad, 400, "invalid_language")
    expect(bad.body.error.details.available).toContain("simple")
    await createBase(node, admin, { name: "Unique name" })
    expectError(
      await call(node, admin, "POST", "/v1/knowledge-bases", { name: "UNIQUE NAME" }),
      409,
      "knowledge_base_name_taken"
    )
    expectError(await call(node, admin, "POST", "/v1/knowledge-bases", { name: "" }), 400, "validation_failed")
    expectError(await call(node, admin, "GET", "/v1/knowledge-bases/not-a-uuid"), 400, "validation_failed")
    expectError(await call(node, admin, "GET", "/v1/knowledge-bases?cursor=garbage"), 400, "invalid_cursor")
  })

  it("ingests Markdown by its headings and finds chunks by stemmed words, with snippet and heading path", async () => {
    const base = await createBase(node, admin, { name: "Handbook base" })
    const added = await addDocument(node, admin, base.id, { name: "handbook.md", text: handbook })
    expect(added).toMatchObject({ status: "processing", format: "md", source: { type: "text" }, name: "handbook.md" })
    const doc = await settled(node, admin, base.id, added.id)
    expect(doc).toMatchObject({ status: "ready", progress: 1, error: null })
    expect(doc.chunk_count).toBe(4)

    const hits = await search(node, admin, base.id, "vacations carrying")
    expect(hits[0]).toMatchObject({
      document_id: doc.id,
      document_name: "handbook.md",
      knowledge_base_id: base.id,
      heading_path: ["Handbook", "Leave"]
    })
    expect(hits[0].snippet).toContain("**vacation**")
    expect(hits[0].text).toContain("thirty days of paid vacation")
    expect(hits[0].score).toBeGreaterThan(0)
    expect(typeof hits[0].chunk_id).toBe("string")

    // web-search syntax: a phrase, an excluded word
    expect((await search(node, admin, base.id, "\"sick leave\"")).map((h) => h.heading_path.at(-1))).toEqual([
      "Sick leave"
    ])
    expect(await search(node, admin, base.id, "leave -manager -vacation")).toEqual([])
    // stop words only: nothing, not an error
    expect(await search(node, admin, base.id, "the and of")).toEqual([])
    expectError(
      await call(node, admin, "POST", `/v1/knowledge-bases/${base.id}/search`, { query: " " }),
      400,
      "validation_failed"
    )
  })

  it("reads HTML as text (scripts and styles left out, headings kept) and PDF page by page from a workspace file", async () => {
    const base = await createBase(node, admin, { name: "Formats" })
    const html = await ready(node, admin, base.id, {
      name: "page.html",
      text: "<html><head><style>.x{color:red}</style><script>var secretToken = 1</script></head><body>" +
        "<h1>Onboarding</h1><p>New laptops are ordered by <a href='https://it.example.com'>IT</a>.</p></body></html>"
    })
    expect(html.format).toBe("html")
    expect(await search(node, admin, base.id, "secretToken")).toEqual([])
    expect(await search(node, admin, base.id, "color")).toEqual([])
    const laptops = await search(node, admin, base.id, "laptops")
    expect(laptops[0]).toMatchObject({ document_id: html.id, heading_path: ["Onboarding"] })
    expect(laptops[0].text).toBe("New laptops are ordered by IT.")

    const file = await uploaded(
      node,
      admin,
      "docs/manual.pdf",
      pdfOf([["Chapter one", "Pumps need oil."], [
        "Chapter two",
        "Valves need grease weekly."
      ]])
    )
    const pdf = await ready(node, admin, base.id, { name: "Manual", file_id: file.id })
    expect(pdf).toMatchObject({ format: "pdf", source: { type: "file", file_id: file.id }, chunk_count: 2 })
    const grease = await search(node, admin, base.id, "grease")
    expect(grease[0]).toMatchObject({ document_name: "Manual", heading_path: ["Page 2"] })
    expect(grease[0].text).toContain("Valves need grease weekly.")
  })

  it("lists documents with a cursor and deletes a document and its chunks", async () => {
    const base = await createBase(node, admin, { name: "Listing" })
    // numbers that sort otherwise as text (999999 after 1000000): the listing orders by number
    await withDatabase(node, (db) => db.query("ALTER TABLE knowledge_documents ALTER COLUMN seq RESTART WITH 999999"))
    const docs: Array<any> = []
    for (const n of [1, 2, 3]) {
      docs.push(await ready(node, admin, base.id, { name: `n${n}.txt`, text: `zebra number ${n}` }))
    }
    const page1 = await call(node, admin, "GET", `/v1/knowledge-bases/${base.id}/documents?limit=2`)
    expect(page1.body.items.map((d: any) => d.name)).toEqual(["n1.txt", "n2.txt"])
    const page2 = await call(
      node,
      admin,
      "GET",
      `/v1/knowledge-bases/${base.id}/documents?limit=2&cursor=${page1.body.next_cursor}`
    )
    expect(page2.body.items.map((d: any) => d.name)).toEqual(["n3.txt"])
    expect(page2.body.next_cursor).toBeNull()
    expect((await call(node, admin, "GET", `/v1/knowledge-bases/${base.id}`)).body.document_count).toBe(3)

    expect((await search(node, admin, base.id, "zebra")).length).toBe(3)
    expect((await call(node, admin, "DELETE", `/v1/knowledge-bases/${base.id}/documents/${docs[0]!.id}`)).status).toBe(
      204
    )
    expect((await search(node, admin, base.id, "zebra")).map((h) => h.document_name).sort()).toEqual([
      "n2.txt",
      "n3.txt"
    ])
    expectError(
      await call(node, admin, "GET", `/v1/knowledge-bases/${base.id}/documents/${docs[0]!.id}`),
      404,
      "not_found"
    )
    const audit = (await auditEvents(node, organizationId)).filter((e: any) =>
      e.targets.some((t: any) => t.id === docs[0]!.id)
    )
    expect(audit.map((e: any) => e.action)).toEqual(["ADD_KNOWLEDGE_DOCUMENT", "DELETE_KNOWLEDGE_DOCUMENT"])
  })

  it("answers bad documents with one error each: sources, size, type, unknown file; unreadable ones fail with a reason", async () => {
    const base = await createBase(node, admin, { name: "Bad input" })
    const post = (body: unknown) => call(node, admin, "POST", `/v1/knowledge-bases/${base.id}/documents`, body)
    const none = await post({ name: "a" })
    expectError(none, 400, "validation_failed")
    expect(none.body.error.message).toBe("The request has no source: give one of `text`, `file_id` or `url`.")
    const two = await post({ name: "a", text: "x", url: "https://example.com/" })
    expectError(two, 400, "validation_failed")
    expect(two.body.error.details.issues).toEqual([
      { path: "url", message: "is a second source: give exactly one of `text`, `file_id` or `url`." }
    ])
    expectError(await post({ text: "x" }), 400, "validation_failed")
    expectError(await post({ name: "big.txt", text: "x".repeat(200_001) }), 413, "document_too_large")
    expectError(await post({ name: "a.pdf", text: "not really", format: "pdf" }), 415, "unsupported_document_type")
    expectError(await post({ name: "a", file_id: "00000000-0000-4000-8000-000000000000" }), 400, "unknown_file")
    const image = await uploaded(node, admin, "logo.png", Buffer.from([0x89, 0x50, 0x4e, 0x47]), "")
    expectError(await post({ name: "logo", file_id: image.id }), 415, "unsupported_document_type")
    expectError(
      await call(node, admin, "POST", "/v1/knowledge-bases/00000000-0000-4000-8000-000000000000/documents", {
        name: "a",
        text: "x"
      }),
      404,
      "not_found"
    )

    // a workspace file added as a PDF, once its ingestion ended
    const pdfSettled = async (name: string, content: string) => {
      const file = await uploaded(node, admin, `${name}.pdf`, content)
      return settled(
        node,
        admin,
        base.id,
        (await addDocument(node, admin, base.id, { name, file_id: file.id, format: "pdf" })).id
      )
    }
    const failed = await pdfSettled("broken", "%PDF-1.4 this is not a pdf at all")
    expect(failed.status).toBe("error")
    expect(["extraction_failed", "no_text"]).toContain(failed.error.reason)
    const unreadable = await pdfSettled("not", "not a pdf at all")
    // one period at the end, not pdf.js's and ours
    expect(unreadable.error).toEqual({
      reason: "extraction_failed",
      message: "The PDF cannot be read: Invalid PDF structure."
    })
    const blank = await settled(
      node,
      admin,
      base.id,
      (await addDocument(node, admin, base.id, { name: "blank.md", text: "  \n\n  " })).id
    )
    expect(blank).toMatchObject({ status: "error", error: { reason: "no_text" }, chunk_count: 0 })
  })
})
