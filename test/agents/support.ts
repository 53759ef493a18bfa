import { createConnection, createConnector, json, petstore } from "../connectors/support.js"
import { startTargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

export const createAgent = async (node: TestNode, apiKey: string, body: Record<string, unknown>) => {
  const response = await node.fetch("/v1/agents", { ...json(body), apiKey })
  if (response.status !== 201) throw new Error(`create agent: ${response.status} ${await response.text()}`)
  return response.json()
}

export const user = { id: "u-1", email: "ada@example.com" }

export const invokeAgent = (
  node: TestNode,
  apiKey: string,
  agentId: string,
  text: string,
  options: { async?: boolean; headers?: Record<string, string>; body?: unknown } = {}
) =>
  node.fetch(`/v1/agents/${agentId}/invoke${options.async === true ? "?asynchronous=true" : ""}`, {
    method: "POST",
    apiKey,
    headers: { "content-type": "application/json", ...options.headers },
    body: JSON.stringify(options.body ?? { input: { text, user } })
  })

/** Polls a task until it ends (or the deadline passes). */
export const waitForTask = async (node: TestNode, apiKey: string, taskId: string, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const task = await (await node.fetch(`/v1/tasks/${taskId}`, { apiKey })).json()
    if (!["pending", "executing"].includes(task.status) || Date.now() > deadline) return task
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** A node, a recording target API with a pet-store connector, and a connection to it. */
export const startPetWorld = async (env: Record<string, string> = {}) => {
  const node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1", ...env })
  const target = await startTargetServer()
  const { api_key: apiKey, organization_id: organizationId } = await node.bootstrap()
  const connector = await createConnector(node, apiKey, petstore(target.url))
  const connection = await createConnection(node, apiKey, connector.id, {
    name: "pets",
    credentials: { type: "api_key", value: "k" }
  })
  return {
    node,
    target,
    apiKey,
    organizationId,
    connection,
    stop: async () => {
      await node.stop()
      await target.close()
    }
  }
}
