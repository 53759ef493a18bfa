import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

/**
 * Every relative link in the documents resolves inside the repository: the file (or folder) exists, and a
 * `#anchor` names a heading of the target, as GitHub slugs it. Links in code blocks and code spans are not
 * links; absolute URLs are not checked (they are not ours to keep).
 */

const root = Path.resolve(import.meta.dirname, "../..")

const documents = [
  "README.md",
  "CHANGELOG.md",
  "bench/RESULTS.md",
  ...Fs.readdirSync(Path.join(root, "docs"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".md"))
    .map((f) => Path.join("docs", f))
]

/** The text outside fenced code blocks, line by line (fenced lines become empty, so line numbers hold). */
const prose = (markdown: string): Array<string> => {
  let fence: string | undefined
  return markdown.split("\n").map((line) => {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1]
    if (fence === undefined && marker !== undefined) {
      fence = marker
      return ""
    }
    if (fence !== undefined) {
      if (line.trim().startsWith(fence)) fence = undefined
      return ""
    }
    return line
  })
}

/** GitHub's heading anchor: lower case, punctuation dropped (`-` and `_` kept), spaces as `-`. */
export const slug = (heading: string): string =>
  heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-")

/** The anchors of a document, with GitHub's `-1`, `-2` for repeated headings. */
const anchorsOf = (markdown: string): Set<string> => {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const line of prose(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1]
    if (heading === undefined) continue
    const base = slug(heading)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}

interface Link {
  readonly file: string
  readonly line: number
  readonly target: string
}

const linksOf = (file: string): Array<Link> =>
  prose(Fs.readFileSync(Path.join(root, file), "utf8")).flatMap((text, i) => {
    const line = text.replace(/`[^`]*`/g, "")
    const inline = [...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!)
    const reference = [...line.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)].map((m) => m[1]!)
    return [...inline, ...reference].map((target) => ({ file, line: i + 1, target }))
  })

const isAbsolute = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target)

/** Why a link does not resolve, or undefined when it does. */
const problemOf = (link: Link): string | undefined => {
  const [pathPart, anchor] = link.target.split("#", 2) as [string, string | undefined]
  const target = pathPart === ""
    ? Path.join(root, link.file)
    : Path.resolve(Path.dirname(Path.join(root, link.file)), decodeURI(pathPart))
  if (target !== root && !target.startsWith(root + Path.sep)) return "leaves the repository"
  if (!Fs.existsSync(target)) return "no such file"
  if (anchor === undefined || anchor === "") return undefined
  if (!target.endsWith(".md")) return "an anchor in a file that is not markdown"
  return anchorsOf(Fs.readFileSync(target, "utf8")).has(anchor) ? undefined : `no heading #${anchor}`
}

describe("links in README.md, CHANGELOG.md, bench/RESULTS.md and docs/", () => {
  it("slugs headings as GitHub does", () => {
    expect(slug("Pitfall: `APP_URL`")).toBe("pitfall-app_url")
    expect(slug("4.6 Invoke an agent")).toBe("46-invoke-an-agent")
    expect(slug("Single sign-on (OIDC)")).toBe("single-sign-on-oidc")
    expect(slug("0.2.0 figures (2026-11-24)")).toBe("020-figures-2026-11-24")
    expect(slug("Internal targets: the egress guard")).toBe("internal-targets-the-egress-guard")
  })

  it("finds the documents and their links", () => {
    expect(documents).toEqual(expect.arrayContaining(["docs/design.md", "docs/reference/errors.md"]))
    expect(documents.flatMap(linksOf).length).toBeGreaterThan(50)
  })

  for (const file of documents) {
    it(`every relative link in ${file} resolves inside the repository`, () => {
      const broken = linksOf(file)
        .filter((link) => !isAbsolute(link.target))
        .flatMap((link) => {
          const problem = problemOf(link)
          return problem === undefined ? [] : [`${link.file}:${link.line} ${link.target}: ${problem}`]
        })
      expect(broken).toEqual([])
    })
  }
})
