import { execFileSync } from "node:child_process"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = Path.resolve(import.meta.dirname, "../..")

describe("the console's types", () => {
  // The build (Vite) strips types without checking them: this is where a change of the OpenAPI document
  // that the console's calls no longer fit shows up (its response shapes come from src/client/openapi.d.ts).
  it("type-checks against the generated OpenAPI types (tsc -p console)", () => {
    const run = () => execFileSync("npx", ["tsc", "-p", "console"], { cwd: ROOT, encoding: "utf8", stdio: "pipe" })
    let output = ""
    try {
      run()
    } catch (e) {
      output = `${(e as { stdout?: string }).stdout ?? ""}${(e as { stderr?: string }).stderr ?? ""}`
    }
    expect(output).toBe("")
  }, 180_000)
})
