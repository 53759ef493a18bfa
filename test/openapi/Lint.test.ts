import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

/** `@redocly/cli lint` with redocly.yaml (the recommended rules) finds no error in the committed document. */
describe("openapi.json", () => {
  it("passes redocly lint with 0 errors", async () => {
    const run = promisify(execFile)
    const result = await run("npx", ["redocly", "lint", "openapi.json", "--format=json"], {
      cwd: new URL("../..", import.meta.url).pathname,
      maxBuffer: 64 * 1024 * 1024
    }).then((r) => r.stdout, (e: { stdout: string }) => e.stdout)
    const report = JSON.parse(result.slice(result.indexOf("{")))
    const errors = (report.problems as Array<{ severity: string; ruleId: string; message: string }>)
      .filter((p) => p.severity === "error")
      .map((p) => `${p.ruleId}: ${p.message}`)
    expect(errors).toEqual([])
  }, 120_000)
})
