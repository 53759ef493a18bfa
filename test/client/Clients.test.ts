import { Effect } from "effect"
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent } from "../agents/support.js"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { type ModelServer, startModelServer } from "../support/ModelServers.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { runEffectClient } from "./scripts/effectClient.js"
import { runFetchClient, type World } from "./scripts/fetchClient.js"

/**
 * The two TypeScript clients as a user meets them: test/client/scripts/*.ts import `switchyard/client` and
 * `switchyard/client/fetch` by the package's own name, typecheck on their own, and run against a live node
 * with a real upstream API (127.0.0.1) and a real model server.
 */
let node: TestNode
let target: TargetServer
let model: ModelServer
let world: World

beforeAll(async () => {
  model = await startModelServer("openai-chat")
  target = await startTargetServer()
  node = await startTestNode({
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    SWITCHYARD_OPENAI_CHAT_BASE_URL: model.url
  })
  const { api_key: apiKey } = await node.bootstrap()
  const connector = await createConnector(node, apiKey, petstore(target.url))
  const connection = await createConnection(node, apiKey, connector.id, {
    name: "pets",
    credentials: { type: "api_key", value: "pet-key" }
  })
  const agent = await createAgent(node, apiKey, {
    name: "Greeter",
    instructions: "Greet the user.",
    model: { provider: "openai-chat", name: "llama3.1" }
  })
  world = { baseUrl: node.baseUrl, apiKey, connectorId: connector.id, connectionId: connection.id, agentId: agent.id }
})

afterAll(async () => {
  await node?.stop()
  await target?.close()
  await model?.close()
})

describe("TypeScript clients", () => {
  it("the client scripts typecheck as a user's code, importing the package's exports by name", async () => {
    const run = promisify(execFile)
    const result = await run("npx", ["tsc", "-p", "test/client/scripts/tsconfig.json"], { cwd: process.cwd() })
      .then(() => ({ code: 0, out: "" }), (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }))
    expect(result.out).toBe("")
    expect(result.code).toBe(0)
  }, 180_000)

  it("the plain-fetch client invokes a connector, an agent (sync and async) and reads a thread", async () => {
    model.script.push({ text: "Hello, Ada." }, { text: "Goodbye, Ada." })
    const out = await runFetchClient(world)

    expect(out.pet.status).toBe(200)
    expect(out.pet.body.path).toBe("/pets/7")
    expect(out.pet.body.query).toEqual({})
    expect(target.requests.at(-1)?.headers["x-api-key"]).toBe("pet-key")

    expect(out.sync).toEqual({ status: 200, result: "Hello, Ada.", taskStatus: "completed" })
    // 202: `asynchronous: true` went out as `asynchronous=true`
    expect(out.accepted.status).toBe(202)
    expect(out.accepted.location).toBe(`/v1/tasks/${out.finished?.id}`)
    expect(out.finished?.status).toBe("completed")
    expect(out.finished?.result).toBe("Goodbye, Ada.")
    expect(out.texts).toEqual(["Say goodbye", "Goodbye, Ada."])
    expect(out.missing).toEqual({ status: 404, code: "not_found" })
    expect(model.requests).toHaveLength(2)
    // raw bodies go out unchanged (openapi-fetch alone sends a string as JSON text, quotes and all)
    expect(out.files.text).toEqual({ status: 201, contentType: "text/csv", body: "a,b\n1,2\n" })
    expect(out.files.bytes).toEqual({ status: 201, contentType: "application/octet-stream", body: [0, 1, 255] })
    expect(out.listed).toEqual([`client-${world.agentId}.bin`, `client-${world.agentId}.csv`])
    expect(out.pagingError).toEqual({ status: 400, code: "invalid_cursor" })
  })

  it("the Effect client invokes a connector, an agent (sync and async) and reads a thread", async () => {
    model.script.push({ text: "Hello again." }, { text: "Bye again." })
    const out = await Effect.runPromise(runEffectClient(world))

    expect(out.pet).toMatchObject({ path: "/pets/8" })
    expect(out.sync.status).toBe("completed")
    expect(out.sync.result).toBe("Hello again.")
    expect(["pending", "executing", "completed"]).toContain(out.accepted.status)
    expect(out.task.status).toBe("completed")
    expect(out.task.result).toBe("Bye again.")
    expect(out.thread.task_id).toBe(out.task.id)
    expect(out.thread.events.map((e) => e.type)).toEqual(["user_message", "model_call", "agent_message"])
    expect(out.missing._tag).toBe("NotFound")
    expect(out.missing).toMatchObject({ code: "not_found" })
    // the request's id, to quote when asking about it (as the REST envelope has it)
    expect(out.missing._tag === "NotFound" && out.missing.request_id).toMatch(/^[0-9a-f-]{36}$/)
    // uploads carry their content (the client once sent none: an empty file)
    expect(out.files.text).toEqual({ contentType: "text/plain", size: 17, body: "hello from Effect" })
    expect(out.files.bytes).toEqual({ contentType: "application/octet-stream", size: 3 })
  })
})
