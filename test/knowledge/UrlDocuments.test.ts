import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, expectError } from "../access/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createBase, ready, search } from "./support.js"

let node: TestNode
let target: TargetServer
let admin: string
let guarded: TestNode
beforeAll(async () => {
  target = await startTargetServer((request, response) => {
    const send = (status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}) => {
      response.writeHead(status, { "content-type": type, ...headers })
      response.end(body)
    }
    switch (request.path) {
      case "/doc.html":
        return send(200, "text/html; charset=utf-8", "<h1>Pricing</h1><p>The basic plan costs nine euros.</p>")
      case "/tokyo.html":
        // 東京都の首都 in Shift_JIS, as its Content-Type says
        return send(
          200,
          "text/html; charset=Shift_JIS",
          Buffer.concat([
            Buffer.from("<p>"),
            Buffer.from([0x93, 0x8c, 0x8b, 0x9e, 0x93, 0x73, 0x82, 0xcc, 0x8e, 0xf1, 0x93, 0x73]),
            Buffer.from("</p>")
          ])
        )
      case "/notes":
        return send(200, "text/markdown", "# Notes\n\nQuarterly goals: hire two engineers.")
      case "/moved":
        return send(302, "text/plain", "", { location: "/doc.html" })
      case "/to-metadata":
        return send(302, "text/plain", "", { location: "http://169.254.169.254/latest/meta-data/" })
      case "/loop":
        return send(302, "text/plain", "", { location: "/loop" })
      case "/logo.png":
        return send(200, "image/png", Buffer.from([0x89, 0x50, 0x4e, 0x47]))
      case "/big.txt":
        return send(200, "text/plain", "a ".repeat(150_000))
      default:
        return send(404, "text/plain", "no such page")
    }
  })
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1", SWITCHYARD_MAX_DOCUMENT_BYTES: "200000" })
  admin = (await node.bootstrap()).api_key
  guarded = await startTestNode()
})
afterAll(async () => {
  await node?.stop()
  await guarded?.stop()
  await target?.close()
})

describe("documents fetched from a URL through the egress guard", () => {
  it("fetches HTML and Markdown by their Content-Type, following a redirect, and indexes them", async () => {
    const base = await createBase(node, admin, { name: "Web" })
    const html = await ready(node, admin, base.id, { name: "Pricing page", url: `${target.url}/moved` })
    expect(html).toMatchObject({ format: "html", source: { type: "url", url: `${target.url}/moved`, file_id: null } })
    expect((await search(node, admin, base.id, "euros"))[0]).toMatchObject({
      document_id: html.id,
      heading_path: ["Pricing"]
    })
    const md = await ready(node, admin, base.id, { name: "Notes", url: `${target.url}/notes` })
    expect(md.format).toBe("md")
    expect((await search(node, admin, base.id, "engineer"))[0].document_id).toBe(md.id)
    expect(target.requests.filter((r) => r.path === "/doc.html")).toHaveLength(1)
  })

  it("reads text in the charset its Content-Type names", async () => {
    const base = await createBase(node, admin, { name: "Charsets" })
    const page = await ready(node, admin, base.id, { name: "Tokyo", url: `${target.url}/tokyo.html` })
    expect(page.size).toBe(19)
    const [hit] = await search(node, admin, base.id, "首都")
    expect(hit).toMatchObject({ document_id: page.id, text: "東京都の首都" })
  })

  it("refuses internal addresses (also behind a redirect), error statuses, redirect loops, other types and size", async () => {
    const base = await createBase(node, admin, { name: "Refusals" })
    const post = (url: string) =>
      call(node, admin, "POST", `/v1/knowledge-bases/${base.id}/documents`, { name: "d", url })
    expectError(await post("http://169.254.169.254/latest/meta-data/"), 422, "document_url_not_allowed")
    expectError(await post("http://10.1.2.3/"), 422, "document_url_not_allowed")
    const redirected = await post(`${target.url}/to-metadata`)
    expectError(redirected, 422, "document_url_not_allowed")
    expect(redirected.body.error.details).toMatchObject({ host: "169.254.169.254" })
    const missing = await post(`${target.url}/missing`)
    expectError(missing, 422, "document_url_unreachable")
    expect(missing.body.error.details).toEqual({ status: 404 })
    expectError(await post(`${target.url}/loop`), 422, "document_url_unreachable")
    expectError(await post(`${target.url}/logo.png`), 415, "unsupported_document_type")
    expectError(await post(`${target.url}/big.txt`), 413, "document_too_large")
    expectError(await post("ftp://example.com/file.txt"), 400, "validation_failed")
    expectError(await post("http://user:pw@127.0.0.1/"), 422, "document_url_unreachable")
    expect((await call(node, admin, "GET", `/v1/knowledge-bases/${base.id}`)).body.document_count).toBe(0)
  })

  it("a node without an egress allowlist refuses loopback, as connectors do", async () => {
    const key = (await guarded.bootstrap()).api_key
    const base = await createBase(guarded, key, { name: "Guarded" })
    const refused = await call(guarded, key, "POST", `/v1/knowledge-bases/${base.id}/documents`, {
      name: "local",
      url: `${target.url}/doc.html`
    })
    expectError(refused, 422, "document_url_not_allowed")
    expect(refused.body.error.message).toContain("SWITCHYARD_EGRESS_ALLOW")
  })
})
