import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call, expectError, withDatabase } from "../access/support.js"
import { uploaded, uploadRaw } from "../files/support.js"
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

  it("finds words inside Chinese, Japanese and Korean sentences, in any language of the base", async () => {
    for (const language of ["english", "simple"]) {
      const base = await createBase(node, admin, { name: `CJK ${language}`, language })
      await ready(node, admin, base.id, {
        name: "東京.md",
        text:
          "# 会社案内\n\n東京は日本の首都です。東京タワーは有名です。\n\n北京是中国的首都。\n\n서울은 한국의 수도입니다."
      })
      const names = async (query: string) => (await search(node, admin, base.id, query)).map((h) => h.document_name)
      for (const query of ["東京", "首都", "日本の首都", "\"東京タワー\"", "中国", "서울", "会社", "首都 -大阪"]) {
        expect(await names(query), `${language}: ${query}`).toEqual(["東京.md"])
      }
      expect(await names("大阪")).toEqual([])
      expect(await names("首都 -北京")).toEqual([])
      const [hit] = await search(node, admin, base.id, "タワー")
      expect(hit.text).toContain("東京タワーは有名です。")
      expect(hit.snippet).toContain("東京タワー")
      expect(hit.heading_path).toEqual(["会社案内"])
    }
  })

  it("reads Latin-1 and UTF-8 with a BOM, emoji or NUL bytes; odd queries find nothing rather than fail", async () => {
    const base = await createBase(node, admin, { name: "Encodings" })
    const latin1 = await uploaded(node, admin, "menu.txt", Buffer.from("Le café est très bon. Crème brûlée.", "latin1"))
    await ready(node, admin, base.id, { name: "menu.txt", file_id: latin1.id })
    const [cafe] = await search(node, admin, base.id, "café brûlée")
    expect(cafe.text).toBe("Le café est très bon. Crème brûlée.")
    const bom = await uploaded(
      node,
      admin,
      "bom.md",
      Buffer.from("\ufeff# Launch 🚀\n\nLaunch day is Friday.\u0000", "utf8")
    )
    await ready(node, admin, base.id, { name: "bom.md", file_id: bom.id })
    const [launch] = await search(node, admin, base.id, "friday")
    expect(launch).toMatchObject({ heading_path: ["Launch 🚀"], text: "Launch day is Friday." })
    // a file in the charset its Content-Type names
    const sjis = await uploadRaw(
      node,
      admin,
      "?name=tokyo.txt",
      Buffer.from([0x93, 0x8c, 0x8b, 0x9e, 0x93, 0x73, 0x82, 0xcc, 0x8e, 0xf1, 0x93, 0x73]),
      "text/plain; charset=Shift_JIS"
    )
    expect(sjis.status).toBe(201)
    await ready(node, admin, base.id, { name: "tokyo.txt", file_id: (await sjis.json()).id })
    expect((await search(node, admin, base.id, "首都")).map((h) => h.text)).toEqual(["東京都の首都"])
    // binary bytes are still no text
    const binary = await uploaded(node, admin, "blob.txt", Buffer.from(Array.from({ length: 400 }, (_, i) => i % 32)))
    const blob = await settled(
      node,
      admin,
      base.id,
      (await addDocument(node, admin, base.id, {
        name: "blob.txt",
        file_id: binary.id
      })).id
    )
    expect(blob.error).toEqual({
      reason: "extraction_failed",
      message: "The document does not read as text (UTF-8 or Latin-1)."
    })
    // tsquery operators and web-search syntax alone: no word to look for, and no error
    const odd = ["&", "|", "!", "!!!", "'", "\"", "\"\"", "(", ")", "\\", ":*", "a:*", "<->", "a & b | !c", "-", "or"]
    for (const query of [...odd, "。", "\"大阪"]) expect(await search(node, admin, base.id, query), query).toEqual([])
    expect((await search(node, admin, base.id, "friday:*")).length).toBe(1)
    expect(await search(node, admin, base.id, "x".repeat(1000))).toEqual([])
    expectError(
      await call(node, admin, "POST", `/v1/knowledge-bases/${base.id}/search`, { query: "x".repeat(1001) }),
      400,
      "validation_failed"
    )
  })

  it("a new version of a document replaces the old one when it is ready, and not if it fails", async () => {
    const base = await createBase(node, admin, { name: "Versions" })
    const v1 = await ready(node, admin, base.id, { name: "faq.md", text: "# FAQ\n\nThe office opens at eight." })
    const v2 = await ready(node, admin, base.id, {
      name: "faq.md",
      text: "# FAQ\n\nThe office opens at nine.",
      replaces: v1.id
    })
    expect(v2.replaces).toBe(v1.id)
    expectError(await call(node, admin, "GET", `/v1/knowledge-bases/${base.id}/documents/${v1.id}`), 404, "not_found")
    expect(await search(node, admin, base.id, "eight")).toEqual([])
    expect((await search(node, admin, base.id, "office")).map((h) => h.document_id)).toEqual([v2.id])

    // a version that fails leaves the one it would have replaced
    const broken = await settled(
      node,
      admin,
      base.id,
      (await addDocument(node, admin, base.id, {
        name: "faq.md",
        text: "  \n\n ",
        replaces: v2.id
      })).id
    )
    expect(broken).toMatchObject({ status: "error", replaces: v2.id })
    expect((await search(node, admin, base.id, "office")).map((h) => h.document_id)).toEqual([v2.id])

    const other = await createBase(node, admin, { name: "Versions elsewhere" })
    const stranger = await call(node, admin, "POST", `/v1/knowledge-bases/${other.id}/documents`, {
      name: "faq.md",
      text: "x",
      replaces: v2.id
    })
    expectError(stranger, 400, "validation_failed")
    expect(stranger.body.error.details.issues).toEqual([{
      path: "replaces",
      message: "is no document of this knowledge base"
    }])
    const audit = (await auditEvents(node, organizationId)).find((e: any) =>
      e.action === "ADD_KNOWLEDGE_DOCUMENT" && e.targets.some((t: any) => t.id === v2.id)
    )
    expect(audit.details.replaces).toBe(v1.id)
  })
})
