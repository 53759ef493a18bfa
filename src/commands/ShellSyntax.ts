import * as Fs from "node:fs"
import { createRequire } from "node:module"
import { getProcessor } from "sh-syntax"

/**
 * The real bash grammar (mvdan/sh compiled to WebAssembly, through sh-syntax): it decides whether text parses
 * at all, and where its top-level statements start. Its tree stops at statements (sh-syntax maps commands to
 * bare positions), so ShellParser reads inside them; the two must agree on the statements or the text is denied.
 */
let processor: ReturnType<typeof getProcessor> | undefined

const parser = () => {
  if (processor === undefined) {
    // compiled once: each parse then only instantiates it (the package's default reads and compiles per call)
    const wasm = new WebAssembly.Module(Fs.readFileSync(createRequire(import.meta.url).resolve("sh-syntax/main.wasm")))
    processor = getProcessor((imports) => WebAssembly.instantiate(wasm, imports))
  }
  return processor
}

export type Syntax =
  | { readonly _tag: "Parsed"; readonly starts: ReadonlyArray<number> }
  | { readonly _tag: "Invalid"; readonly message: string }

/** Parses `text` as bash: the start (string index) of each top-level statement, or the parser's message. */
export const bashSyntax = async (text: string): Promise<Syntax> => {
  try {
    const file = await parser()(text, { keepComments: false })
    const bytes = Buffer.from(text, "utf8")
    const index = (offset: number) => bytes.subarray(0, offset).toString("utf8").length
    return { _tag: "Parsed", starts: file.Stmts.map((s) => index(s.Pos.Offset)) }
  } catch (e) {
    return { _tag: "Invalid", message: e instanceof Error ? e.message : String(e) }
  }
}
