import { at, ok, type OperationExample } from "./Story.js"

const openai = { provider: "openai", base_url: null, has_api_key: true, updated_at: at(10, "08:20:00") }

/** The node's probes, and the organization's model providers. */
export const systemExamples: Record<string, OperationExample> = {
  healthz: { response: ok({ status: "ok" }) },
  // one of two nodes: `node` is its runner's address, the 300 shards of the default group split between them
  readyz: { response: ok({ status: "ready", node: "10.0.1.12:34431", shards_owned: 150, shards_total: 300 }) },
  listModelProviders: { response: ok([openai]) },
  setModelProvider: { request: { api_key: "sk-proj-acme-retail-example-key" }, response: ok(openai) }
}
