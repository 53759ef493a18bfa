import { afterAll, describe, expect, it } from "vitest"
import { API_KEY, type NodeProcess, runCli, spawnNode } from "../support/NodeProcess.js"
import { freePort } from "../support/ports.js"
import { testEnvironment } from "../support/TestNode.js"

// The commands run the package bin compiled ahead of time (runCli); the nodes the bin itself, through tsx.
describe.sequential("switchyard CLI", () => {
  // the node of the first test, on a database whose secrets it sealed: the second test's running node
  let env: Record<string, string>
  let node: NodeProcess | undefined
  afterAll(async () => {
    await node?.stop()
  })

  it("migrates, then bootstraps an organization and prints its key as JSON", async () => {
    env = await testEnvironment()
    const migrated = await runCli(["migrate"], env)
    expect(migrated.code).toBe(0)
    expect(migrated.stdout).toContain("Migrations applied")
    const created = await runCli(["bootstrap", "--org", "Acme", "--email", "ada@acme.test", "--json"], env)
    expect(created.code).toBe(0)
    const body = JSON.parse(created.stdout.trim())
    expect(Object.keys(body).sort()).toEqual(["api_key", "organization_id", "user_id"])
    expect(body.api_key).toMatch(API_KEY)

    // the key works against a node on the same database, and no default organization is added there
    node = spawnNode(env)
    await node.waitReady()
    const me = await (await fetch(`${node.baseUrl}/v1/me`, { headers: { "x-api-key": body.api_key } })).json()
    expect(me.organization).toMatchObject({ id: body.organization_id, name: "Acme" })
    expect(me.user.email).toBe("ada@acme.test")
    expect(me.role).toBe("super_admin")
    expect(node.output()).not.toMatch(API_KEY)
  })

  it("refuses a SWITCHYARD_SECRET_KEY other than the one the database's secrets are sealed with", async () => {
    const first = node!
    try {
      // a second node on the same database with another key: it would seal credentials no other node opens
      const other = await runCli(["serve"], {
        ...env,
        SWITCHYARD_HTTP_PORT: String(await freePort()),
        SWITCHYARD_RUNNER_PORT: String(await freePort()),
        SWITCHYARD_SECRET_KEY: Buffer.alloc(32, 8).toString("base64")
      })
      expect(other.code).toBe(1)
      expect(other.stderr).toContain(
        `switchyard: invalid configuration: (Invalid data at SWITCHYARD_SECRET_KEY: "is not the key this ` +
          `database's secrets are encrypted with: every node sharing the database must use the same key")\n`
      )
      expect(other.stderr).not.toMatch(/at .*\.ts:\d+/)
    } finally {
      expect(await first.stop()).toBe(0)
    }
    // the database's own key still starts a node
    const again = spawnNode(env)
    try {
      await again.waitReady()
    } finally {
      expect(await again.stop()).toBe(0)
    }
  })

  it("fails at start with a message naming a bad variable", async () => {
    const env = await testEnvironment({ SWITCHYARD_HTTP_PORT: "eighty" })
    const result = await runCli(["serve"], env)
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("SWITCHYARD_HTTP_PORT")
    expect(result.stderr).not.toMatch(/at .*\.ts:\d+/)
  })

  it("requires SWITCHYARD_SECRET_KEY with DATABASE_URL, and rejects a short one", async () => {
    const { SWITCHYARD_SECRET_KEY: _, ...env } = await testEnvironment()
    const [missing, short] = await Promise.all([
      runCli(["serve"], env),
      runCli(["serve"], { ...env, SWITCHYARD_SECRET_KEY: "c2hvcnQ=" })
    ])
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toContain("SWITCHYARD_SECRET_KEY")
    expect(short.code).not.toBe(0)
    expect(short.stderr).toContain("SWITCHYARD_SECRET_KEY")
  })

  it("prints usage for an unknown command", async () => {
    const result = await runCli(["frobnicate"], {})
    expect(result.code).not.toBe(0)
  })
})
