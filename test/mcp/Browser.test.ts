import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { chromium } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent } from "../agents/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { PASSWORD, signedUpAdmin, TestOAuthProvider } from "./support.js"

// Debian's package (.ci/run installs it when missing); playwright-core never downloads a browser
const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => Fs.existsSync(p))
const ARTIFACTS = Path.resolve(import.meta.dirname, "../../test-artifacts")

let node: TestNode
let callback: Http.Server
let callbackUrl: string
beforeAll(async () => {
  if (CHROMIUM === undefined) return
  node = await startTestNode()
  // the MCP client's redirect URI: a loopback page, as a desktop client runs one
  callback = Http.createServer((_, res) => res.end("You can close this window."))
  await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve))
  callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`
})
afterAll(async () => {
  await node?.stop()
  callback?.close()
})

describe.skipIf(CHROMIUM === undefined)("the OAuth flow in a real browser (headless Chromium)", () => {
  it("signs in, shows the consent page, approves, and the MCP client works with the token", async () => {
    const admin = await signedUpAdmin(node)
    const agent = await createAgent(node, admin.api_key, {
      name: "Browser agent",
      model: { provider: "scripted", script: [{ text: "Signed in through a browser." }] }
    })
    const url = new URL(`${node.baseUrl}/mcp/`)
    const provider = new TestOAuthProvider(callbackUrl, { client_name: "Browser test client" })
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider })
    await expect(new Client({ name: "browser", version: "1" }).connect(first)).rejects.toThrow(/Unauthorized/)

    const browser = await chromium.launch({ executablePath: CHROMIUM!, headless: true, args: ["--no-sandbox"] })
    try {
      const page = await browser.newPage()
      await page.goto(provider.authorizationUrl!.toString())
      expect(new URL(page.url()).pathname).toBe("/oauth_login")
      await page.fill("#email", admin.email)
      await page.fill("#password", PASSWORD)
      await page.click("button[type=submit]")
      await page.waitForSelector("text=Authorize Browser test client")
      const text = await page.textContent("body")
      expect(text).toContain(admin.email)
      expect(text).toContain(callbackUrl)
      expect(text).toContain("loopback")
      Fs.mkdirSync(ARTIFACTS, { recursive: true })
      await page.screenshot({ path: Path.join(ARTIFACTS, "mcp-consent.png"), fullPage: true })
      await Promise.all([
        page.waitForURL((u) => u.toString().startsWith(callbackUrl)),
        page.click("button[value=approve]")
      ])
      const redirect = new URL(page.url())
      expect(redirect.searchParams.get("state")).toBe(provider.authorizationUrl!.searchParams.get("state"))
      await first.finishAuth(redirect.searchParams.get("code")!)
    } finally {
      await browser.close()
    }

    const client = new Client({ name: "browser", version: "1" })
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }))
    const answer = await client.callTool({ name: "invoke_agent", arguments: { agent_id: agent.id, text: "hi" } })
    expect(answer.structuredContent).toMatchObject({ status: "completed", result: "Signed in through a browser." })
    await client.close()
  })
})
