import { compile, type FormatCallback } from "html-to-text"
import type { DocumentFormat } from "../../schema/KnowledgeBases.js"
import { type Block, markdownBlocks, plainBlocks } from "./Chunker.js"

/** A document that cannot be read as its format (a broken PDF, bytes that are not text). */
export class ExtractionFailed {
  readonly _tag = "ExtractionFailed"
  constructor(readonly reason: "extraction_failed" | "no_text", readonly message: string) {}
}

// HTML headings come out as Markdown headings, so HTML is chunked by the same structure as Markdown
const heading = (level: number): FormatCallback => (elem, walk, builder) => {
  builder.openBlock({ leadingLineBreaks: 2 })
  builder.addLiteral(`${"#".repeat(level)} `)
  walk(elem.children, builder)
  builder.closeBlock({ trailingLineBreaks: 2 })
}

const htmlToText = compile({
  wordwrap: false,
  formatters: Object.fromEntries([1, 2, 3, 4, 5, 6].map((n) => [`h${n}`, heading(n)])),
  selectors: [
    ...[1, 2, 3, 4, 5, 6].map((n) => ({ selector: `h${n}`, format: `h${n}` })),
    { selector: "a", options: { ignoreHref: true } },
    { selector: "img", format: "skip" },
    { selector: "script", format: "skip" },
    { selector: "style", format: "skip" },
    { selector: "noscript", format: "skip" },
    { selector: "template", format: "skip" },
    { selector: "head", format: "skip" }
  ]
})

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false })
// Latin-1 as browsers read it (its superset Windows-1252): what text that is not UTF-8 almost always is
const latin1 = new TextDecoder("windows-1252")

/**
 * Decodes UTF-8 (a BOM dropped), else Latin-1, rather than indexing `caf�` for `café`; bytes that are mostly
 * not text are refused rather than indexed as noise.
 */
const decodeText = (bytes: Uint8Array): string | ExtractionFailed => {
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    text = latin1.decode(bytes)
  }
  const sample = text.slice(0, 8192)
  const bad = (sample.match(/[\u0000-\u0008\u000e-\u001f\u007f-\u009f\ufffd]/g) ?? []).length
  if (sample.length > 0 && bad / sample.length > 0.1) {
    return new ExtractionFailed("extraction_failed", "The document does not read as text (UTF-8 or Latin-1).")
  }
  return text
}

// pdf.js is large: loaded the first time a PDF is read, not at start-up
let pdfjs: Promise<typeof import("pdfjs-dist/legacy/build/pdf.mjs")> | undefined

/** Each page's text as a `Page N` section; lines a page's text items end with are kept as line ends. */
const pdfBlocks = async (bytes: Uint8Array, onPage: (page: number, pages: number) => void): Promise<Array<Block>> => {
  const lib = await (pdfjs ??= import("pdfjs-dist/legacy/build/pdf.mjs"))
  // a copy: pdf.js transfers (detaches) the buffer it is given
  const document = await lib.getDocument({
    data: new Uint8Array(bytes),
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    stopAtErrors: false,
    verbosity: 0
  }).promise
  try {
    const blocks: Array<Block> = []
    for (let n = 1; n <= document.numPages; n++) {
      const page = await document.getPage(n)
      const content = await page.getTextContent()
      let text = ""
      for (const item of content.items) {
        if (!("str" in item)) continue
        text += item.str
        if (item.hasEOL) text += "\n"
        else if (item.str !== "" && !text.endsWith(" ")) text += " "
      }
      page.cleanup()
      const paragraphs = plainBlocks(text.replace(/[ \t]+\n/g, "\n"))
      if (paragraphs.length > 0) blocks.push({ kind: "heading", level: 1, text: `Page ${n}` }, ...paragraphs)
      onPage(n, document.numPages)
    }
    return blocks
  } finally {
    await document.destroy()
  }
}

/**
 * The blocks of a document of `format`. `onProgress` hears how far reading has come (0–1), which for a
 * PDF is page by page.
 */
export const extractBlocks = async (
  format: DocumentFormat,
  bytes: Uint8Array,
  onProgress: (fraction: number) => void = () => {}
): Promise<Array<Block> | ExtractionFailed> => {
  let blocks: Array<Block>
  if (format === "pdf") {
    try {
      blocks = await pdfBlocks(bytes, (page, pages) => onProgress(page / pages))
    } catch (e) {
      // pdf.js's messages end with a period of their own ("Invalid PDF structure.")
      const why = String((e as Error)?.message ?? e).replace(/\.+$/, "")
      return new ExtractionFailed("extraction_failed", `The PDF cannot be read: ${why}.`)
    }
  } else {
    const text = decodeText(bytes)
    if (text instanceof ExtractionFailed) return text
    blocks = format === "md"
      ? markdownBlocks(text)
      : format === "html"
      ? markdownBlocks(htmlToText(text))
      : plainBlocks(text)
  }
  onProgress(1)
  if (!blocks.some((b) => b.kind === "paragraph")) {
    return new ExtractionFailed(
      "no_text",
      format === "pdf"
        ? "The PDF holds no text (a scanned PDF needs text recognition first)."
        : "The document holds no text."
    )
  }
  return blocks
}

/**
 * Text bytes in the charset their Content-Type names (`text/html; charset=Shift_JIS`), as UTF-8: what
 * extraction reads. Bytes without a charset, in UTF-8 or in one this runtime does not know are kept as they are.
 */
export const asUtf8 = (bytes: Uint8Array, contentType: string | undefined): Uint8Array => {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? "")?.[1]?.toLowerCase()
  if (charset === undefined || charset === "utf-8" || charset === "utf8" || charset === "us-ascii") return bytes
  try {
    return Buffer.from(new TextDecoder(charset).decode(bytes), "utf8")
  } catch {
    return bytes
  }
}

const EXTENSIONS: Record<string, DocumentFormat | undefined> = {
  md: "md",
  markdown: "md",
  html: "html",
  htm: "html",
  pdf: "pdf",
  txt: "txt",
  text: "txt"
}

/** The format of a source from its media type, else its name's extension; undefined when unsupported. */
export const formatOf = (contentType: string | undefined, name: string): DocumentFormat | undefined => {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase()
  if (type === "text/markdown" || type === "text/x-markdown") return "md"
  if (type === "text/html" || type === "application/xhtml+xml") return "html"
  if (type === "application/pdf") return "pdf"
  const extension = /\.([a-z0-9]+)$/i.exec(name.split(/[?#]/)[0]!)?.[1]?.toLowerCase()
  const byName = extension === undefined ? undefined : EXTENSIONS[extension]
  if (type === "" || type === "application/octet-stream" || type === "binary/octet-stream") return byName
  if (type === "text/plain") return byName === "md" ? "md" : "txt"
  return undefined
}
