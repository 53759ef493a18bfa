import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { auditActions } from "../../schema/Audit.js"

const root = Path.resolve(import.meta.dirname, "../..")
const sources = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(Path.join(dir, e.name))
      : e.name.endsWith(".ts")
      ? [Path.join(dir, e.name)]
      : []
  )

// an audit action is a quoted VERB_NOUN in the code: the verbs that record a change or a decision
const ACTION =
  /"((?:CREATE|UPDATE|DELETE|ADD|REMOVE|REVOKE|ARCHIVE|PUBLISH|ATTACH|DETACH|APPROVE|REJECT|PAUSE|RESUME|ROTATE|DISABLE)_[A-Z_]+)"/g

describe("audit actions", () => {
  it("every action the code writes is in the schema's list and the access-control guide's table, and back", () => {
    const written = new Set<string>()
    for (const file of sources(Path.join(root, "src"))) {
      for (const m of Fs.readFileSync(file, "utf8").matchAll(ACTION)) written.add(m[1]!)
    }
    const listed = new Set<string>(auditActions)
    expect([...written].filter((a) => !listed.has(a)).sort()).toEqual([])
    const guide = Fs.readFileSync(Path.join(root, "docs/guides/access-control.md"), "utf8")
    expect(auditActions.filter((a) => !guide.includes(`\`${a}\``))).toEqual([])
  })
})
