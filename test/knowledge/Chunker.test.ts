import { describe, expect, it } from "vitest"
import { CHUNK_MAX, CHUNK_OVERLAP, chunksOf, markdownBlocks, plainBlocks } from "../../src/knowledge/Chunker.js"
import { indexedText, searchedQuery } from "../../src/knowledge/CjkSegments.js"
import { formatOf } from "../../src/knowledge/TextExtraction.js"

const sentence = (n: number) => `Sentence number ${n} says something about topic ${n % 7}. `

describe("chunking follows the document's structure", () => {
  it("starts a chunk at each heading and keeps the heading path (a # in fenced code is no heading)", () => {
    const chunks = chunksOf(markdownBlocks(
      "Intro before any heading.\n\n# Guide\n\nFirst.\n\n## Setup\n\n```sh\n# not a heading\nmake\n```\n\n" +
        "### Linux\n\nApt.\n\n## Usage\n\nRun it.\n\nOther\n=====\n\nSetext."
    ))
    expect(chunks.map((c) => [c.headingPath, c.text])).toEqual([
      [[], "Intro before any heading."],
      [["Guide"], "First."],
      [["Guide", "Setup"], "```sh\n# not a heading\nmake\n```"],
      [["Guide", "Setup", "Linux"], "Apt."],
      [["Guide", "Usage"], "Run it."],
      [["Other"], "Setext."]
    ])
    expect(chunks.map((c) => c.index)).toEqual([0, 1, 2, 3, 4, 5])
  })

  it("packs paragraphs up to the target, splits a long one at sentence ends, and overlaps consecutive chunks", () => {
    const paragraphs = Array.from(
      { length: 12 },
      (_, p) => Array.from({ length: 4 }, (_, s) => sentence(p * 4 + s)).join("").trim()
    )
    const long = Array.from({ length: 80 }, (_, s) => sentence(1000 + s)).join("")
    const chunks = chunksOf(plainBlocks([...paragraphs, long].join("\n\n")))
    expect(chunks.length).toBeGreaterThan(4)
    for (const chunk of chunks) expect(chunk.text.length).toBeLessThanOrEqual(CHUNK_MAX)
    for (let i = 1; i < chunks.length; i++) {
      const previous = chunks[i - 1]!.text
      const carried = chunks[i]!.text.split("\n\n")[0]!
      // the next chunk begins with the previous one's tail
      expect(carried.length).toBeLessThanOrEqual(CHUNK_OVERLAP)
      expect(previous.endsWith(carried)).toBe(true)
    }
    // no sentence is lost: every sentence of the long paragraph is in some chunk, whole
    for (let s = 0; s < 80; s++) expect(chunks.some((c) => c.text.includes(sentence(1000 + s).trim()))).toBe(true)
  })

  it("a run-on text without sentence ends is still cut into chunks", () => {
    const chunks = chunksOf(plainBlocks("x".repeat(5000)))
    expect(chunks.length).toBeGreaterThan(3)
    for (const chunk of chunks) expect(chunk.text.length).toBeLessThanOrEqual(CHUNK_MAX)
  })

  it("reads the format from the media type, else the extension", () => {
    expect(formatOf("text/markdown; charset=utf-8", "x")).toBe("md")
    expect(formatOf("text/html", "x.txt")).toBe("html")
    expect(formatOf("application/pdf", "x")).toBe("pdf")
    expect(formatOf("application/octet-stream", "notes/a.MD")).toBe("md")
    expect(formatOf("text/plain", "readme.markdown")).toBe("md")
    expect(formatOf("text/plain", "data")).toBe("txt")
    expect(formatOf("image/png", "a.txt")).toBeUndefined()
    expect(formatOf(undefined, "archive.zip")).toBeUndefined()
  })

  it("cuts Chinese, Japanese and Korean runs into two-character pieces, indexed and searched alike", () => {
    expect(indexedText("Plain text, café.")).toBeUndefined()
    expect(indexedText("東京都は、日本の首都。Tokyo")).toBe(" 東京 京都 都は   日本 本の の首 首都  Tokyo")
    expect(searchedQuery("vacation -sick")).toBe("vacation -sick")
    expect(searchedQuery("東京都")).toBe("\"東京 京都\" ")
    expect(searchedQuery("東京 -大阪府 or \"日本の首都\"")).toBe("東京  -\"大阪 阪府\"  or \"日本 本の の首 首都 \"")
    expect(searchedQuery("the 首都")).toBe("the 首都 ")
  })

  it("cuts a long Chinese or Japanese paragraph at its sentence ends", () => {
    const sentence = (n: number) => `これは第${n}番目の文で、会社の規則について詳しく説明しています。`
    const text = Array.from({ length: 120 }, (_, i) => sentence(i)).join("")
    const chunks = chunksOf(plainBlocks(text))
    expect(chunks.length).toBeGreaterThan(1)
    for (const chunk of chunks) expect(chunk.text.endsWith("。"), chunk.text.slice(-10)).toBe(true)
  })
})
