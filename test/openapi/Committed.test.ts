import { readFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { openApiTypes } from "../../scripts/openapi-document.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

/**
 * The committed openapi.json is the document the node serves, and src/client/openapi.d.ts is generated from
 * it: a change to the contract shows in review as a change to these files. One command refreshes both.
 */
const STALE = "differs from what the node serves: run `npm run openapi` and commit openapi.json and " +
  "src/client/openapi.d.ts"

let node: TestNode
let served: Record<string, any>

beforeAll(async () => {
  node = await startTestNode()
  const response = await node.fetch("/openapi.json")
  expect(response.status).toBe(200)
  served = await response.json()
})

afterAll(async () => {
  await node?.stop()
})

const committed = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8")

/** JSON pointers where two documents differ (the first few), so a failure says where, not 35,000 lines. */
const differences = (a: unknown, b: unknown, at = "", out: Array<string> = []): Array<string> => {
  if (out.length >= 10) return out
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    if (JSON.stringify(a) !== JSON.stringify(b)) out.push(at || "/")
    return out
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)])
  for (const key of keys) {
    differences((a as any)[key], (b as any)[key], `${at}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`, out)
  }
  return out
}

describe("the committed OpenAPI document", () => {
  it("openapi.json equals the served /openapi.json", () => {
    expect(differences(JSON.parse(committed("openapi.json")), served), `openapi.json ${STALE}`).toEqual([])
  })

  it("src/client/openapi.d.ts is what openapi-typescript makes of the served document", async () => {
    expect(committed("src/client/openapi.d.ts") === await openApiTypes(served), `src/client/openapi.d.ts ${STALE}`)
      .toBe(true)
  })
})
