import * as Fs from "node:fs"
import * as Path from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

/**
 * The layout holds (DESIGN.md §2): schema ← cluster ← src, one way, and no module reaches itself through its
 * imports. `import type` counts too: a type-only circle still ties the modules together, and it is where runtime
 * circles start.
 */
const root = Path.resolve(import.meta.dirname, "../..")
const folders = ["schema", "cluster", "src"] as const

const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = Path.join(dir, entry.name)
    return entry.isDirectory() ? sourceFiles(full) : /\.tsx?$/.test(entry.name) ? [full] : []
  })

/** Every module specifier a file names: imports, re-exports, `import()` and `import x = require()`. */
const specifiers = (file: string): Array<string> => {
  const source = ts.createSourceFile(file, Fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false)
  const found: Array<string> = []
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) found.push(node.moduleSpecifier.text)
    } else if (
      ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined && ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text)
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const expression = node.moduleReference.expression
      if (ts.isStringLiteral(expression)) found.push(expression.text)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const literal = node.argument.literal
      if (ts.isStringLiteral(literal)) found.push(literal.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** The file a relative specifier names (`./X.js` is `./X.ts` under NodeNext); `undefined` for packages. */
const resolve = (from: string, specifier: string): string | undefined => {
  if (!specifier.startsWith(".")) return undefined
  const base = Path.resolve(Path.dirname(from), specifier)
  const candidates = [
    base.replace(/\.js$/, ".ts"),
    base.replace(/\.js$/, ".tsx"),
    base,
    `${base}.ts`,
    `${base}/index.ts`
  ]
  return candidates.find((candidate) => Fs.existsSync(candidate) && Fs.statSync(candidate).isFile())
}

const relative = (file: string) => Path.relative(root, file).split(Path.sep).join("/")

const graph = new Map<string, Array<string>>()
for (const folder of folders) {
  for (const file of sourceFiles(Path.join(root, folder))) {
    graph.set(
      relative(file),
      specifiers(file).flatMap((s) => {
        const target = resolve(file, s)
        return target === undefined ? [] : [relative(target)]
      })
    )
  }
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
const circles = (edges: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  let next = 0
  const connect = (v: string) => {
    index.set(v, next)
    low.set(v, next)
    next++
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || (edges.get(v) ?? []).includes(v)) found.push(component.sort())
    }
  }
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) connect(v)
  return found
}

describe("module layout", () => {
  it("has the source files it checks", () => {
    expect(graph.size).toBeGreaterThan(100)
    expect(graph.has("src/Node.ts")).toBe(true)
  })

  it("no import circles in src/, schema/ and cluster/", () => {
    expect(circles(graph).map((files) => files.join(" ↔ "))).toEqual([])
  })

  it("schema/ imports nothing from src/ or cluster/", () => {
    const outward = [...graph].flatMap(([file, targets]) =>
      file.startsWith("schema/")
        ? targets.filter((t) => t.startsWith("src/") || t.startsWith("cluster/")).map((t) => `${file} → ${t}`)
        : []
    )
    expect(outward).toEqual([])
  })

  // a released migration is frozen: code it borrowed from the application would change what it does later
  it("migrations import nothing from src/ outside src/db/migrations/", () => {
    const outward = [...graph].flatMap(([file, targets]) =>
      file.startsWith("src/db/migrations/")
        ? targets.filter((t) => !t.startsWith("src/db/migrations/")).map((t) => `${file} → ${t}`)
        : []
    )
    expect(outward).toEqual([])
  })

  it("cluster/ imports nothing from src/", () => {
    const outward = [...graph].flatMap(([file, targets]) =>
      file.startsWith("cluster/") ? targets.filter((t) => t.startsWith("src/")).map((t) => `${file} → ${t}`) : []
    )
    expect(outward).toEqual([])
  })
})
