import { describe, expect, it } from "vitest"
import { result } from "../../src/mcp/JsonRpc.js"
import { bodyJson, toolError, toolResult } from "../../src/mcp/McpAnswer.js"

/** bodyJson skips serializing a tool result's structured content twice: it must still be JSON.stringify's text. */
describe("an answer's body as JSON text", () => {
  const outputs: ReadonlyArray<unknown> = [
    { status: 200, content_type: "application/json", body: { pet: "Rex", tags: ["a", "b"], n: 1.5 }, truncated: false },
    { status: 418, content_type: "text/plain", body: "I am a \"teapot\"\n\u2028é😀", truncated: false },
    { skipped: undefined, nested: { deeper: [null, true, { x: undefined }] } },
    [{ id: 1 }, { id: 2 }],
    [],
    "a string",
    42,
    null
  ]

  it("is what JSON.stringify writes, for tool results with and without a text, and for anything else", () => {
    for (const id of [7, "call-7"]) {
      for (const output of outputs) {
        for (const text of [undefined, "The agent's answer."]) {
          const body = result(id, toolResult(output, text))
          expect(bodyJson(body)).toBe(JSON.stringify(body))
          expect(JSON.parse(bodyJson(body))).toEqual(JSON.parse(JSON.stringify(body)))
        }
      }
      const refused = result(id, toolError({ code: "forbidden", message: "No." }))
      expect(bodyJson(refused)).toBe(JSON.stringify(refused))
    }
    for (const other of [{ error: { code: "x", message: "y" } }, { jsonrpc: "2.0", id: 1, error: { code: -32600 } }]) {
      expect(bodyJson(other)).toBe(JSON.stringify(other))
    }
  })
})
