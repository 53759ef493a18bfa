/**
 * A document's structure as read from its format, and the chunks (passages) it is indexed as. Pure.
 *
 * Chunks follow the structure: a heading starts a new chunk, paragraphs are packed whole up to
 * `CHUNK_TARGET` characters, and a paragraph too long for one chunk is split at sentence (else word) ends.
 * Consecutive chunks of one section overlap by up to `CHUNK_OVERLAP` characters (the previous chunk's tail),
 * so a passage cut at a chunk's end is still found whole in the next. Every chunk keeps its heading path.
 */

export type Block =
  | { readonly kind: "heading"; readonly level: number; readonly text: string }
  | { readonly kind: "paragraph"; readonly text: string }

export interface Chunk {
  readonly index: number
  readonly headingPath: ReadonlyArray<string>
  readonly text: string
}

export const CHUNK_TARGET = 1200
export const CHUNK_MAX = 1600
export const CHUNK_OVERLAP = 200

const ATX = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$|^ {0,3}(#{1,6})[ \t]*$/
const FENCE = /^ {0,3}(`{3,}|~{3,})/
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/

const clean = (text: string) => text.replace(/\u0000/g, " ").replace(/\r\n?/g, "\n")

/** Plain text: paragraphs separated by blank lines. */
export const plainBlocks = (text: string): Array<Block> =>
  clean(text).split(/\n[ \t]*\n/).map((p) => p.trim()).filter((p) => p !== "").map((text) => ({
    kind: "paragraph",
    text
  }))

/** Markdown: ATX and setext headings, paragraphs, fenced code kept whole (a `#` in it is no heading). */
export const markdownBlocks = (text: string): Array<Block> => {
  const blocks: Array<Block> = []
  let paragraph: Array<string> = []
  const flush = () => {
    const joined = paragraph.join("\n").trim()
    if (joined !== "") blocks.push({ kind: "paragraph", text: joined })
    paragraph = []
  }
  const lines = clean(text).split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const fence = FENCE.exec(line)
    if (fence !== null) {
      flush()
      const marker = fence[1]!
      const code = [line]
      for (i++; i < lines.length; i++) {
        code.push(lines[i]!)
        if (lines[i]!.trimStart().startsWith(marker)) break
      }
      blocks.push({ kind: "paragraph", text: code.join("\n").trim() })
      continue
    }
    const atx = ATX.exec(line)
    if (atx !== null) {
      flush()
      const heading = (atx[2] ?? "").trim()
      blocks.push({ kind: "heading", level: (atx[1] ?? atx[3])!.length, text: heading })
      continue
    }
    if (line.trim() === "") {
      flush()
      continue
    }
    const setext = SETEXT.exec(line)
    if (setext !== null && paragraph.length === 1) {
      const heading = paragraph[0]!.trim()
      paragraph = []
      blocks.push({ kind: "heading", level: setext[1]!.startsWith("=") ? 1 : 2, text: heading })
      continue
    }
    paragraph.push(line.replace(/[ \t]+$/, ""))
  }
  flush()
  return blocks
}

/** Splits a paragraph longer than a chunk at sentence ends (also 。！？), then word ends, then anywhere. */
const pieces = (paragraph: string): Array<string> => {
  if (paragraph.length <= CHUNK_MAX) return [paragraph]
  // Chinese and Japanese end sentences with full-width marks and write no spaces: without them, a cut anywhere
  const sentences = paragraph.match(/[^.!?。！？\n]+(?:[.!?。！？]+["')\]」』）]*|\n|$)\s*/g) ?? [paragraph]
  const out: Array<string> = []
  let current = ""
  const push = (s: string) => {
    if (s.trim() !== "") out.push(s.trim())
  }
  for (const sentence of sentences) {
    if (sentence.length > CHUNK_TARGET) {
      push(current)
      current = ""
      // a run-on "sentence" (a table, a minified blob): cut at spaces, else hard
      let rest = sentence
      while (rest.length > CHUNK_TARGET) {
        const space = rest.lastIndexOf(" ", CHUNK_TARGET)
        const cut = space > CHUNK_TARGET / 2 ? space : CHUNK_TARGET
        push(rest.slice(0, cut))
        rest = rest.slice(cut)
      }
      current = rest
    } else if (current.length + sentence.length > CHUNK_TARGET) {
      push(current)
      current = sentence
    } else {
      current += sentence
    }
  }
  push(current)
  return out
}

/** The tail of a chunk carried into the next: its last paragraph if short, else its last words. */
const overlapOf = (parts: ReadonlyArray<string>): string => {
  const last = parts[parts.length - 1] ?? ""
  if (last.length <= CHUNK_OVERLAP) return last
  const tail = last.slice(-CHUNK_OVERLAP)
  const space = tail.indexOf(" ")
  return (space === -1 ? tail : tail.slice(space + 1)).trim()
}

/** The chunks of a document's blocks, in order. */
export const chunksOf = (blocks: ReadonlyArray<Block>): Array<Chunk> => {
  const chunks: Array<Chunk> = []
  let path: Array<{ level: number; text: string }> = []
  let parts: Array<string> = []
  let size = 0
  let fresh = 0 // parts of this chunk that are not overlap
  const emit = () => {
    if (fresh > 0) chunks.push({ index: chunks.length, headingPath: path.map((h) => h.text), text: parts.join("\n\n") })
    parts = []
    size = 0
    fresh = 0
  }
  for (const block of blocks) {
    if (block.kind === "heading") {
      emit()
      path = [...path.filter((h) => h.level < block.level), { level: block.level, text: block.text }]
      continue
    }
    for (const piece of pieces(block.text)) {
      if (fresh > 0 && size + piece.length + 2 > CHUNK_TARGET) {
        const carried = overlapOf(parts)
        emit()
        if (carried !== "" && carried.length + piece.length + 2 <= CHUNK_MAX) {
          parts = [carried]
          size = carried.length
        }
      }
      parts.push(piece)
      size += piece.length + 2
      fresh++
    }
  }
  emit()
  return chunks
}
