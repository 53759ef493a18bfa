/**
 * What a shell word is known to be before it runs. `value` is its text when nothing in it depends on the
 * run (quotes removed, escapes applied); `undefined` when an expansion, a substitution or a glob decides it.
 * `splits`: the word may turn into several words, or none (an unquoted expansion, a glob, a brace list).
 */
export interface ShellWord {
  readonly source: string
  readonly value: string | undefined
  readonly splits: boolean
}

/** An assignment before a command (`X=1 cmd`) or on its own (`X=1`). */
export interface ShellAssignment {
  readonly name: string
  readonly value: ShellWord
}

export interface ShellRedirect {
  readonly op: string
  /** The file or descriptor; a here-document's delimiter for `<<`. */
  readonly target: ShellWord
}

/** One simple command as it was written: its words after the leading assignments, and its redirections. */
export interface SimpleCommand {
  readonly source: string
  readonly words: ReadonlyArray<ShellWord>
  readonly assignments: ReadonlyArray<ShellAssignment>
  readonly redirects: ReadonlyArray<ShellRedirect>
}

/** Shell text the gate does not read: the whole command is denied, with this reason. */
export class Unreadable extends Error {
  constructor(readonly reason: string) {
    super(reason)
  }
}

/** A word built from literal text only. */
export const literalWord = (text: string): ShellWord => ({ source: text, value: text, splits: false })

/** Arithmetic over numbers only: a name inside is evaluated as an expression, and `a[$(cmd)]` in its value runs `cmd`. */
export const PLAIN_ARITHMETIC = /^[0-9\s+\-*/%<>=!&|^~?:(),]*$/

/** Whether every `name[subscript]` in a word has a subscript of numbers only (the other kinds can run commands). */
export const plainSubscripts = (text: string) =>
  [...text.matchAll(/[A-Za-z_][A-Za-z0-9_]*\[([^\]]*)\]/g)].every((m) => PLAIN_ARITHMETIC.test(m[1]!)) &&
  !(text.includes("[") && /[$`]/.test(text))
