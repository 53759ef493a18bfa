import { Duration, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeExtractionThreads } from "../../src/knowledge/ExtractionThreads.js"
import { extractBlocks, ExtractionFailed } from "../../src/knowledge/TextExtraction.js"
import { uploaded } from "../files/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { addDocument, createBase, pdfOf, settled } from "./support.js"

// a PDF whose reading takes pdf.js a while (tens of pages of text)
const longPdf = () =>
  pdfOf(
    Array.from({ length: 40 }, (_, p) => Array.from({ length: 40 }, (_, l) => `Page ${p} line ${l} of the manual.`))
  )

describe("documents are read on worker threads", () => {
  it("gives the blocks and progress that reading on the main thread gives, for PDF and HTML, thread after thread", async () => {
    const threads = makeExtractionThreads(Duration.minutes(1))
    try {
      const pdf = longPdf()
      const progress: Array<number> = []
      const blocks = await Effect.runPromise(threads.extract("pdf", pdf, (f) => progress.push(f)))
      expect(blocks).toEqual(await extractBlocks("pdf", pdf))
      expect(progress.length).toBeGreaterThan(1)
      expect(progress.at(-1)).toBe(1)
      // the same thread again, then two at once (two threads)
      const html = new TextEncoder().encode("<h1>Title</h1><p>Some text.</p><script>x()</script>")
      const [a, b] = await Promise.all([
        Effect.runPromise(threads.extract("html", html, () => {})),
        Effect.runPromise(threads.extract("pdf", pdfOf([["Only page"]]), () => {}))
      ])
      expect(a).toEqual(await extractBlocks("html", html))
      expect(b).toEqual(await extractBlocks("pdf", pdfOf([["Only page"]])))
      // a failure comes back as the same ExtractionFailed
      const broken = await Effect.runPromise(threads.extract("pdf", new TextEncoder().encode("not a pdf"), () => {}))
      expect(broken).toEqual(
        new ExtractionFailed("extraction_failed", "The PDF cannot be read: Invalid PDF structure.")
      )
    } finally {
      await threads.close()
    }
  })

  it("stops a document past the time limit with a failure that names the setting, and reads the next on a new thread", async () => {
    const slow = makeExtractionThreads(Duration.millis(1))
    const timedOut = await Effect.runPromise(slow.extract("pdf", longPdf(), () => {}))
    await slow.close()
    expect(timedOut).toBeInstanceOf(ExtractionFailed)
    expect(timedOut).toMatchObject({ reason: "extraction_failed" })
    expect((timedOut as ExtractionFailed).message).toMatch(/took longer than .*SWITCHYARD_KNOWLEDGE_EXTRACTION_TIMEOUT/)
  })
})

describe("a document past SWITCHYARD_KNOWLEDGE_EXTRACTION_TIMEOUT", () => {
  let node: TestNode
  let admin: string
  beforeAll(async () => {
    node = await startTestNode({ SWITCHYARD_KNOWLEDGE_EXTRACTION_TIMEOUT: "1ms" })
    admin = (await node.bootstrap()).api_key
  })
  afterAll(() => node?.stop())

  it("fails extraction_failed with the reason, and the node goes on serving", async () => {
    const base = await createBase(node, admin, { name: "Manuals" })
    const file = await uploaded(node, admin, "manual.pdf", longPdf())
    const document = await settled(
      node,
      admin,
      base.id,
      (await addDocument(node, admin, base.id, { name: "manual", file_id: file.id, format: "pdf" })).id
    )
    expect(document).toMatchObject({ status: "error", chunk_count: 0, error: { reason: "extraction_failed" } })
    expect(document.error.message).toBe(
      "Reading the document took longer than 1ms (SWITCHYARD_KNOWLEDGE_EXTRACTION_TIMEOUT)."
    )
    expect((await fetch(`${node.baseUrl}/healthz`)).status).toBe(200)
  })
})
