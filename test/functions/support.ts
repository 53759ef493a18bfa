import { expect } from "vitest"
import { call } from "../access/support.js"
import type { TestNode } from "../support/TestNode.js"

let counter = 0
export const uniqueName = (prefix = "fn") => `${prefix}_${Date.now().toString(36)}_${++counter}`

export const createFunction = async (
  node: TestNode,
  apiKey: string,
  code: string,
  extra: Record<string, unknown> = {}
) => {
  const r = await call(node, apiKey, "POST", "/v1/functions", { name: uniqueName(), code, ...extra })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body as { id: string; name: string; version: number }
}

export const invokeFunction = (node: TestNode, apiKey: string, id: string, input?: unknown, query = "") =>
  call(node, apiKey, "POST", `/v1/functions/${id}/invoke${query}`, input === undefined ? {} : { input })

/**
 * Creates a function from `code` and invokes it once with `input`; code refused at create (it does not load)
 * answers with that refusal, 400 `invalid_code`.
 */
export const runCode = async (
  node: TestNode,
  apiKey: string,
  code: string,
  input?: unknown,
  extra: Record<string, unknown> = {}
) => {
  const created = await call(node, apiKey, "POST", "/v1/functions", { name: uniqueName(), code, ...extra })
  if (created.status !== 201) return created
  return invokeFunction(node, apiKey, created.body.id, input)
}
