import { expect } from "vitest"
import { call } from "../access/support.js"
import type { TestNode } from "../support/TestNode.js"

export const createBase = async (node: TestNode, apiKey: string, body: Record<string, unknown>) => {
  const created = await call(node, apiKey, "POST", "/v1/knowledge-bases", body)
  if (created.status !== 201) throw new Error(`create base: ${created.status} ${JSON.stringify(created.body)}`)
  return created.body
}

export const addDocument = async (node: TestNode, apiKey: string, baseId: string, body: Record<string, unknown>) => {
  const added = await call(node, apiKey, "POST", `/v1/knowledge-bases/${baseId}/documents`, body)
  if (added.status !== 202) throw new Error(`add document: ${added.status} ${JSON.stringify(added.body)}`)
  return added.body
}

/** Polls a document until it leaves `processing` (or the deadline passes). */
export const settled = async (
  node: TestNode,
  apiKey: string,
  baseId: string,
  documentId: string,
  timeoutMs = 30_000
) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const got = await call(node, apiKey, "GET", `/v1/knowledge-bases/${baseId}/documents/${documentId}`)
    expect(got.status).toBe(200)
    if (got.body.status !== "processing" || Date.now() > deadline) return got.body
    await new Promise((r) => setTimeout(r, 50))
  }
}

export const ready = async (node: TestNode, apiKey: string, baseId: string, body: Record<string, unknown>) => {
  const added = await addDocument(node, apiKey, baseId, body)
  const document = await settled(node, apiKey, baseId, added.id)
  expect(document.status, JSON.stringify(document)).toBe("ready")
  return document
}

export const search = async (node: TestNode, apiKey: string, baseId: string, query: string, limit?: number) => {
  const found = await call(node, apiKey, "POST", `/v1/knowledge-bases/${baseId}/search`, {
    query,
    ...(limit === undefined ? {} : { limit })
  })
  expect(found.status, JSON.stringify(found.body)).toBe(200)
  return found.body.items as Array<any>
}

/** A small well-formed PDF: one page per entry of `pages`, each line a text line (Helvetica). */
export const pdfOf = (pages: ReadonlyArray<ReadonlyArray<string>>) => {
  const objects: Array<string> = []
  const pageIds = pages.map((_, i) => 4 + i * 2)
  objects[1] = "<< /Type /Catalog /Pages 2 0 R >>"
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(" ")}] /Count ${pages.length} >>`
  objects[3] = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
  pages.forEach((lines, i) => {
    const escape = (s: string) => s.replace(/[\\()]/g, (c) => `\\${c}`)
    const stream = `BT /F1 12 Tf 72 720 Td 14 TL ${lines.map((l) => `(${escape(l)}) Tj T*`).join(" ")} ET`
    objects[pageIds[i]!] = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${pageIds[i]! + 1} 0 R ` +
      "/Resources << /Font << /F1 3 0 R >> >> >>"
    objects[pageIds[i]! + 1] = `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`
  })
  let out = "%PDF-1.4\n"
  const offsets: Array<number> = []
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = out.length
    out += `${id} 0 obj\n${objects[id]}\nendobj\n`
  }
  const xref = out.length
  out += `xref\n0 ${objects.length}\n0000000000 65535 f \n`
  for (let id = 1; id < objects.length; id++) out += `${String(offsets[id]).padStart(10, "0")} 00000 n \n`
  out += `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return Buffer.from(out, "latin1")
}
