import { describe, expect, it } from "vitest"
import { result } from "../../src/mcp/JsonRpc.js"
import { bodyJson, toolError, toolResult, toolResultJson } from "../../src/mcp/McpAnswer.js"
import { upstreamAnswerJson } from "../../src/mcp/UpstreamAnswer.js"

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

  it("carries a target's JSON body as sent, the same value as the parsed and serialized answer", () => {
    for (
      const [type, text] of [
        ["application/json", ` {"pet": "Rex",\n "n": 1.50, "s": "\\u00e9\\"\u2028"} `],
        ["application/json", "[1, 2]"],
        ["application/json", "not json"],
        ["application/json", ""],
        ["text/plain", "I am a \"teapot\""],
        [undefined, "x"]
      ] as const
    ) {
      const answer = upstreamAnswerJson(200, type, text)
      const body = result(7, toolResultJson(answer.value, answer.json))
      const sent = JSON.parse(bodyJson(body))
      const serialized = JSON.parse(JSON.stringify(result(7, toolResult(answer.value))))
      expect(sent.result.structuredContent).toEqual(serialized.result.structuredContent)
      expect(JSON.parse(sent.result.content[0].text)).toEqual(JSON.parse(serialized.result.content[0].text))
      expect({ ...sent, result: {} }).toEqual({ ...serialized, result: {} })
    }
  })
})
