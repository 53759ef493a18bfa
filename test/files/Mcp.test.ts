import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, call } from "../access/support.js"
import { obtainTokens, PASSWORD, setPassword, signedUpAdmin } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { patterned, uploaded } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

/** The MCP SDK's client, signed in as `email` (the full OAuth flow, then a bearer token). */
const connect = async (email: string) => {
  const { access_token } = (await obtainTokens(node, email)).tokens
  const client = new Client({ name: "files-test", version: "1.0.0" })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${node.baseUrl}/mcp/`), {
      requestInit: { headers: { authorization: `Bearer ${access_token}` } }
    })
  )
  return client
}

const tool = async (client: Client, name: string, args: Record<string, unknown>) => {
  const result = await client.callTool({ name, arguments: args })
  return {
    isError: result.isError === true,
    value: result.structuredContent as any,
    text: (result.content as any)[0]?.text
  }
}

describe("workspace files through MCP, with the SDK's client", () => {
  it("list_files, read_file and write_file do what the REST calls do, for the same caller", async () => {
    const admin = await signedUpAdmin(node)
    const client = await connect(admin.email)
    const { tools } = await client.listTools()
    const byName = new Map(tools.map((t) => [t.name, t]))
    expect(byName.get("list_files")?.annotations).toMatchObject({ readOnlyHint: true })
    expect(byName.get("read_file")?.annotations).toMatchObject({ readOnlyHint: true })
    expect(byName.get("write_file")?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true })
    expect(byName.get("write_file")?.inputSchema.required).toEqual(["name", "text"])

    const written = await tool(client, "write_file", { name: "notes/plan.md", text: "# Plan\n\nÜber 🚀 alles\n" })
    expect(written.isError).toBe(false)
    expect(written.value).toMatchObject({
      name: "notes/plan.md",
      content_type: "text/markdown; charset=utf-8",
      size: Buffer.byteLength("# Plan\n\nÜber 🚀 alles\n"),
      scope: "organization",
      owner: { type: "user" }
    })
    // the same file over REST
    const overRest = await call(node, admin.api_key, "GET", `/v1/files/${written.value.id}/content`)
    expect(overRest.body).toBe("# Plan\n\nÜber 🚀 alles\n")

    const taken = await tool(client, "write_file", { name: "notes/plan.md", text: "again" })
    expect(taken.isError).toBe(true)
    expect(taken.value).toMatchObject({ error: { code: "file_exists" } })
    const replaced = await tool(client, "write_file", { name: "notes/plan.md", text: "v2", overwrite: true })
    expect(replaced.value.id).not.toBe(written.value.id)

    await uploaded(node, admin.api_key, "notes/other.txt", "other")
    const listed = await tool(client, "list_files", { prefix: "notes/", limit: 1 })
    expect(listed.value.items.map((f: any) => f.name)).toEqual(["notes/other.txt"])
    const next = await tool(client, "list_files", { prefix: "notes/", cursor: listed.value.next_cursor })
    expect(next.value).toMatchObject({ items: [{ name: "notes/plan.md" }], next_cursor: null })

    const byId = await tool(client, "read_file", { file_id: replaced.value.id })
    expect(byId.value).toMatchObject({ text: "v2", offset: 0, bytes_read: 2, truncated: false })
    const byNameRead = await tool(client, "read_file", { name: "notes/other.txt" })
    expect(byNameRead.value.text).toBe("other")
    await client.close()
  })

  it("read_file pages a long text by bytes, never splitting a character, and refuses binary files", async () => {
    const admin = await signedUpAdmin(node)
    const client = await connect(admin.email)
    const text = "aé🚀".repeat(1000)
    const file = (await tool(client, "write_file", { name: "long.txt", text })).value
    let offset = 0
    let read = ""
    for (let i = 0; i < 1000; i++) {
      const page = await tool(client, "read_file", { file_id: file.id, offset, max_bytes: 1000 })
      expect(page.isError).toBe(false)
      expect(page.value.bytes_read).toBeLessThanOrEqual(1000)
      read += page.value.text
      offset = page.value.offset + page.value.bytes_read
      if (!page.value.truncated) break
    }
    expect(read).toBe(text)
    // started inside a character: the text starts at the next one
    const inside = await tool(client, "read_file", { file_id: file.id, offset: 2, max_bytes: 10 })
    expect(inside.value).toMatchObject({ offset: 3, text: "🚀aé" })

    const binary = await uploaded(node, admin.api_key, "image.bin", patterned(4096))
    const refused = await tool(client, "read_file", { file_id: binary.id })
    expect(refused.isError).toBe(true)
    expect(refused.value).toMatchObject({ error: { code: "file_not_text" } })
    const both = await tool(client, "read_file", { file_id: binary.id, name: "image.bin" })
    expect(both.value).toMatchObject({ error: { code: "validation_failed" } })
    const neither = await tool(client, "read_file", {})
    expect(neither.value).toMatchObject({ error: { code: "validation_failed" } })
    const badName = await tool(client, "write_file", { name: "../escape.txt", text: "x" })
    expect(badName.isError).toBe(true)
    await client.close()
  })

  it("a Member reads but may not write; another organization's files are not found", async () => {
    const admin = await signedUpAdmin(node)
    const member = await addMember(node, admin.api_key, "member")
    await setPassword(node, member.email, PASSWORD)
    const shared = await uploaded(node, admin.api_key, "shared.txt", "hello")
    const client = await connect(member.email)
    expect((await tool(client, "read_file", { file_id: shared.id })).value.text).toBe("hello")
    const refused = await tool(client, "write_file", { name: "member.txt", text: "x" })
    expect(refused.value).toMatchObject({ error: { code: "forbidden" } })
    await client.close()

    const stranger = await signedUpAdmin(node, "Stranger's organization")
    const other = await connect(stranger.email)
    const missing = await tool(other, "read_file", { file_id: shared.id })
    expect(missing.value).toMatchObject({ error: { code: "not_found" } })
    expect((await tool(other, "read_file", { name: "shared.txt" })).value).toMatchObject({
      error: { code: "not_found" }
    })
    expect((await tool(other, "list_files", {})).value.items).toEqual([])
    await other.close()
  })
})
