import { describe, expect, it } from "vitest"
import { serverSentEvents } from "../../../src/agents/models/ServerSentEvents.js"

const collect = async (chunks: Array<string | Buffer>) => {
  const events = []
  for await (const event of serverSentEvents(chunks)) events.push(event)
  return events
}

describe("serverSentEvents", () => {
  it("handles CRLF split across chunks, comments, multi-line data and a missing final blank line", async () => {
    const events = await collect([
      "\uFEFF: keep-alive\r",
      "\nevent: first\r\ndata: a\r",
      "\ndata: b\r\n\r",
      "\ndata:{\"x\":1}\n\n",
      "data: tail"
    ])
    expect(events).toEqual([
      { event: "first", data: "a\nb" },
      { event: "message", data: "{\"x\":1}" },
      { event: "message", data: "tail" }
    ])
  })

  it("decodes UTF-8 split inside a character", async () => {
    const bytes = Buffer.from("data: 21°C\n\n")
    const cut = bytes.indexOf(0xb0) // second byte of "°"
    expect(await collect([bytes.subarray(0, cut), bytes.subarray(cut)])).toEqual([
      { event: "message", data: "21°C" }
    ])
  })
})
