/**
 * The `sh` blocks of the README's tour (the section "## A 5-minute tour", up to the next "## "), in order.
 * A block right after `<!-- tour: servers … -->` or `<!-- tour: addresses … -->` has that role (the tour
 * test provides those itself); every other block is run.
 */
export interface TourBlock {
  readonly role: "run" | "servers" | "addresses"
  /** Its lines, with `\` continuations kept as written. */
  readonly lines: ReadonlyArray<string>
  /** The README line of its opening fence. */
  readonly line: number
}

export const tourBlocks = (readme: string): Array<TourBlock> => {
  const lines = readme.split("\n")
  const start = lines.findIndex((l) => l === "## A 5-minute tour")
  if (start === -1) throw new Error("README.md has no \"## A 5-minute tour\" section")
  const end = lines.findIndex((l, i) => i > start && l.startsWith("## "))
  const blocks: Array<TourBlock> = []
  let role: TourBlock["role"] = "run"
  for (let i = start + 1; i < (end === -1 ? lines.length : end); i++) {
    const line = lines[i]!
    const marker = /^<!-- tour: (servers|addresses)\b/.exec(line)
    if (marker !== null) role = marker[1] as TourBlock["role"]
    else if (line === "```sh") {
      const close = lines.indexOf("```", i + 1)
      blocks.push({ role, lines: lines.slice(i + 1, close), line: i + 1 })
      role = "run"
      i = close
    } else if (line.startsWith("```")) {
      // another language's block (output shown as text): skip it whole
      i = lines.indexOf("```", i + 1)
    }
  }
  return blocks
}
