import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

/**
 * Who may do what is written once, in schema/Policy.ts: the server checks an entry of it (`requirePermission`,
 * `holds`), and the OpenAPI document shows the same entry. A role threshold written beside a check
 * (`roleAtLeast(principal.role, "admin")`) would be a second table the document cannot see.
 */
const root = Path.resolve(import.meta.dirname, "../..")

const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = Path.join(dir, entry.name)
    return entry.isDirectory() ? sourceFiles(full) : entry.name.endsWith(".ts") ? [full] : []
  })

describe("the policy table", () => {
  it("is the only place a role threshold is written", () => {
    const thresholds = sourceFiles(Path.join(root, "src")).flatMap((file) =>
      [...Fs.readFileSync(file, "utf8").matchAll(/roleAtLeast\([^,()]+,\s*"(\w+)"\)/g)].map((m) =>
        `${Path.relative(root, file)}: ${m[0]}`
      )
    )
    expect(thresholds).toEqual([])
  })

  it("is what every role check reads", () => {
    const files = sourceFiles(Path.join(root, "src"))
    const checks = files.filter((file) => /requirePermission\(|holds\(/.test(Fs.readFileSync(file, "utf8")))
    expect(checks.length).toBeGreaterThan(15)
    for (const file of checks) {
      const text = Fs.readFileSync(file, "utf8")
      for (const m of text.matchAll(/requirePermission\(\w+, ([^)]+)\)/g)) {
        expect(m[1], `${Path.relative(root, file)}: ${m[0]}`).toMatch(/Policy\.\w+|^permission$/)
      }
    }
  })
})
