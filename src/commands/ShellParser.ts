import {
  PLAIN_ARITHMETIC,
  plainSubscripts,
  type ShellAssignment,
  type ShellRedirect,
  type ShellWord,
  type SimpleCommand,
  Unreadable
} from "./ShellWord.js"

/** Substitutions, subshells and nested scripts deeper than this are not read. */
const MAX_DEPTH = 8
/** Subshells, groups and bodies inside one another in one text. */
const MAX_NESTING = 64
const META = new Set([" ", "\t", "\n", ";", "&", "|", "(", ")", "<", ">"])
const REDIRECT_OPS = ["&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", ">&", ">>", ">|", "<", ">"]
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/
/**
 * `${name}`, `${#name}`, an operator on a plain name with a tail that expands nothing, or a substring with
 * numbers only (`${x:0:n}` evaluates `n` as arithmetic, and a name's value there can run commands).
 */
const PARAMETER = /^#?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])$/
const PARAMETER_OP =
  /^([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])((:?[-=+?]|##?|%%?|\/\/?|\^\^?|,,?)[^`$[\]()'"\\{}]*|:[0-9]+(:[0-9]+)?)$/

interface Pending {
  readonly delimiter: string
  readonly strip: boolean
  readonly quoted: boolean
}

interface Scanned {
  value: string | undefined
  splits: boolean
}

/**
 * A reader of bash command text that finds every simple command in it, wherever it sits: in lists, pipelines,
 * subshells, groups, `if`/`while`/`for`/`case` bodies, function bodies, command and process substitutions,
 * backticks and here-documents. It reads a subset of bash, strictly: whatever it does not know is
 * `Unreadable`, and the gate denies it. It runs after the real grammar (sh-syntax) accepted the text.
 */
class Reader {
  i = 0
  pending: Array<Pending> = []
  private nesting = 0

  constructor(readonly src: string, readonly out: Array<SimpleCommand>, readonly depth: number) {
    if (depth > MAX_DEPTH) throw new Unreadable("commands are nested too deeply")
  }

  private fail(what: string): never {
    throw new Unreadable(`${what} (at character ${this.i + 1})`)
  }

  /** The character at the current position (a method: it changes as the reader moves). */
  private ch(): string | undefined {
    return this.src[this.i]
  }

  private at(s: string) {
    return this.src.startsWith(s, this.i)
  }

  private delimited(at: number) {
    return at >= this.src.length || META.has(this.src[at]!)
  }

  /** A reserved word (or `{`, `}`, `[[`, `]]`) at the current position. */
  private atWord(w: string) {
    return this.at(w) && this.delimited(this.i + w.length)
  }

  private skipBlanks() {
    for (;;) {
      const c = this.ch()
      if (c === " " || c === "\t") this.i++
      else if (c === "\\" && this.src[this.i + 1] === "\n") this.i += 2
      else if (c === "#") {
        while (this.i < this.src.length && this.ch() !== "\n") this.i++
      } else return
    }
  }

  private newline() {
    this.i++
    if (this.pending.length > 0) this.hereDocuments()
  }

  private skipLines() {
    for (;;) {
      this.skipBlanks()
      if (this.ch() === "\n") this.newline()
      else return
    }
  }

  private expect(w: string) {
    this.skipLines()
    if (!this.atWord(w)) this.fail(`expected '${w}'`)
    this.i += w.length
  }

  /** An and-or list after another until a closer: the start of each (the top level's are checked against sh-syntax). */
  list(closers: ReadonlyArray<string>): Array<number> {
    if (++this.nesting > MAX_NESTING) this.fail("commands are nested too deeply")
    try {
      return this.items(closers)
    } finally {
      this.nesting--
    }
  }

  private items(closers: ReadonlyArray<string>): Array<number> {
    const starts: Array<number> = []
    for (;;) {
      this.skipBlanks()
      while (this.ch() === "\n" || (this.ch() === ";" && !this.at(";;") && !this.at(";&"))) {
        if (this.ch() === "\n") this.newline()
        else this.i++
        this.skipBlanks()
      }
      if (this.i >= this.src.length || this.atCloser(closers)) return starts
      starts.push(this.i)
      this.andOr()
      this.skipBlanks()
      if (this.at(";;") || this.at(";&")) return starts
      if (this.ch() === ";" || this.ch() === "\n" || (this.ch() === "&" && !this.at("&&"))) {
        if (this.ch() === "\n") this.newline()
        else this.i++
        continue
      }
      if (this.i >= this.src.length || this.atCloser(closers)) return starts
      this.fail(`unexpected '${this.ch()}'`)
    }
  }

  private atCloser(closers: ReadonlyArray<string>) {
    return closers.some((w) => w === ")" ? this.ch() === ")" : w.startsWith(";") ? this.at(w) : this.atWord(w))
  }

  private andOr() {
    this.pipeline()
    for (;;) {
      this.skipBlanks()
      if (!this.at("&&") && !this.at("||")) return
      this.i += 2
      this.skipLines()
      this.pipeline()
    }
  }

  private pipeline() {
    this.skipBlanks()
    if (this.atWord("time")) {
      this.i += 4
      this.skipBlanks()
      if (this.atWord("-p")) this.i += 2
    }
    this.skipBlanks()
    while (this.atWord("!")) {
      this.i++
      this.skipBlanks()
    }
    this.command()
    for (;;) {
      this.skipBlanks()
      if (this.at("||") || !this.at("|")) return
      this.i += this.at("|&") ? 2 : 1
      this.skipLines()
      this.command()
    }
  }

  private command(): void {
    this.skipBlanks()
    if (this.at("((")) {
      this.arithmetic(2)
      return this.compoundRedirects()
    }
    if (this.ch() === "(") {
      this.i++
      this.list([")"])
      if (this.ch() !== ")") this.fail("expected ')'")
      this.i++
      return this.compoundRedirects()
    }
    if (this.atWord("{")) {
      this.i++
      this.list(["}"])
      this.expect("}")
      return this.compoundRedirects()
    }
    if (this.atWord("if")) {
      this.i += 2
      this.list(["then"])
      this.expect("then")
      for (;;) {
        this.list(["elif", "else", "fi"])
        if (this.atWord("elif")) {
          this.i += 4
          this.list(["then"])
          this.expect("then")
        } else if (this.atWord("else")) {
          this.i += 4
          this.list(["fi"])
          this.expect("fi")
          break
        } else {
          this.expect("fi")
          break
        }
      }
      return this.compoundRedirects()
    }
    if (this.atWord("while") || this.atWord("until")) {
      this.i += 5
      this.list(["do"])
      this.expect("do")
      this.list(["done"])
      this.expect("done")
      return this.compoundRedirects()
    }
    if (this.atWord("for")) return this.forLoop()
    if (this.atWord("case")) return this.caseOf()
    if (this.atWord("function")) {
      this.i += 8
      this.skipBlanks()
      this.word()
      this.skipBlanks()
      if (this.at("()")) this.i += 2
      this.skipLines()
      return this.command()
    }
    if (this.atWord("[[")) return this.test()
    for (const w of ["select", "coproc"]) if (this.atWord(w)) this.fail(`'${w}' is not supported`)
    for (const w of ["then", "elif", "else", "fi", "do", "done", "esac", "}", "]]", "in"]) {
      if (this.atWord(w)) this.fail(`unexpected '${w}'`)
    }
    this.simple()
  }

  /** Redirections after a compound command: recorded as a command without words, so each is judged. */
  private compoundRedirects() {
    const start = this.i
    const redirects: Array<ShellRedirect> = []
    for (;;) {
      this.skipBlanks()
      const op = this.redirectOp()
      if (op === undefined) break
      redirects.push(this.redirect(op))
    }
    if (redirects.length > 0) {
      this.out.push({ source: this.src.slice(start, this.i).trim(), words: [], assignments: [], redirects })
    }
  }

  private forLoop() {
    this.i += 3
    this.skipBlanks()
    if (this.at("((")) this.fail("arithmetic 'for ((…))' loops are not supported")
    const name = this.word()
    if (name.value === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name.value)) this.fail("a 'for' needs a name")
    this.skipLines()
    if (this.atWord("in")) {
      this.i += 2
      for (;;) {
        this.skipBlanks()
        if (this.ch() === ";" || this.ch() === "\n" || this.i >= this.src.length) break
        this.word()
      }
    }
    this.list(["do"])
    this.expect("do")
    this.list(["done"])
    this.expect("done")
    this.compoundRedirects()
  }

  private caseOf() {
    this.i += 4
    this.skipBlanks()
    this.word()
    this.expect("in")
    for (;;) {
      this.skipLines()
      if (this.atWord("esac")) {
        this.i += 4
        break
      }
      if (this.ch() === "(") this.i++
      for (;;) {
        this.skipBlanks()
        this.word()
        this.skipBlanks()
        if (this.ch() === "|") this.i++
        else if (this.ch() === ")") break
        else this.fail("expected ')' after a case pattern")
      }
      this.i++
      this.list([";;&", ";;", ";&", "esac"])
      if (this.at(";;&")) this.i += 3
      else if (this.at(";;") || this.at(";&")) this.i += 2
    }
    this.compoundRedirects()
  }

  /** `[[ … ]]`: nothing runs but what its words substitute; arithmetic comparisons of unknown words are refused. */
  private test() {
    this.i += 2
    let arithmetic = false
    let operands = true
    let previous: string | undefined
    for (;;) {
      this.skipLines()
      if (this.i >= this.src.length) this.fail("expected ']]'")
      if (this.atWord("]]")) {
        this.i += 2
        break
      }
      if (this.at("&&") || this.at("||")) this.i += 2
      else if ("()!<>|".includes(this.ch()!)) this.i++
      else {
        const w = this.word()
        if (w.source === "") this.fail(`unexpected '${this.ch()}'`)
        if (/^-(eq|ne|lt|le|gt|ge)$/.test(w.value ?? "")) arithmetic = true
        else if (!/^[-+]?[0-9]+$/.test(w.value ?? "")) operands = false
        if (/\[/.test(w.value ?? w.source) && /[$`]/.test(w.value ?? w.source)) {
          this.fail("a subscript in '[[ … ]]' can run commands")
        }
        if ((previous === "-v" || previous === "-R") && !plainSubscripts(w.value ?? w.source)) {
          this.fail("a subscript in '[[ -v … ]]' is evaluated as arithmetic, which can run commands: use numbers only")
        }
        previous = w.value
      }
    }
    if (arithmetic && !operands) {
      this.fail("'[[ … -eq … ]]' evaluates its words as arithmetic, which can run commands: compare numbers only")
    }
    this.compoundRedirects()
  }

  private redirectOp(): string | undefined {
    let j = this.i
    while (j < this.src.length && this.src[j]! >= "0" && this.src[j]! <= "9") j++
    if (this.src[j] === "{" && j === this.i) {
      const close = this.src.indexOf("}", j)
      if (close > 0 && /^\{[A-Za-z_][A-Za-z0-9_]*\}[<>]/.test(this.src.slice(j, close + 2))) {
        this.fail("'{name}' redirections are not supported")
      }
    }
    const op = REDIRECT_OPS.find((o) => this.src.startsWith(o, j))
    if (op === undefined) return undefined
    if (j > this.i && op.startsWith("&")) return undefined
    if ((op === "<" || op === ">") && this.src[j + 1] === "(") return undefined // process substitution
    const full = this.src.slice(this.i, j + op.length)
    this.i = j + op.length
    return full
  }

  private redirect(op: string): ShellRedirect {
    this.skipBlanks()
    const target = this.word()
    if (target.source === "") this.fail(`'${op}' needs a target`)
    const bare = op.replace(/^[0-9]+/, "")
    if (bare === "<<" || bare === "<<-") {
      const delimiter = unquoted(target.source)
      if (delimiter === undefined) this.fail("a here-document's delimiter must be literal")
      this.pending.push({ delimiter, strip: bare === "<<-", quoted: /['"\\]/.test(target.source) })
    }
    return { op, target }
  }

  /** The bodies of the here-documents opened on the line just ended; unquoted ones substitute like "…". */
  private hereDocuments() {
    const docs = this.pending
    this.pending = []
    for (const doc of docs) {
      const lines: Array<string> = []
      for (;;) {
        if (this.i >= this.src.length) break
        const end = this.src.indexOf("\n", this.i)
        const line = this.src.slice(this.i, end < 0 ? this.src.length : end)
        this.i = end < 0 ? this.src.length : end + 1
        if ((doc.strip ? line.replace(/^\t+/, "") : line) === doc.delimiter) break
        lines.push(line)
      }
      if (!doc.quoted) new Reader(lines.join("\n"), this.out, this.depth + 1).doubleQuoted(false)
    }
  }

  private simple(): void {
    const start = this.i
    const words: Array<ShellWord> = []
    const assignments: Array<ShellAssignment> = []
    const redirects: Array<ShellRedirect> = []
    for (;;) {
      this.skipBlanks()
      if (this.i >= this.src.length) break
      const op = this.redirectOp()
      if (op !== undefined) {
        redirects.push(this.redirect(op))
        continue
      }
      if (this.ch() === "(") {
        if (words.length === 1 && assignments.length === 0 && redirects.length === 0) {
          // a function definition: its body's commands are judged where they are written
          this.i++
          this.skipBlanks()
          if (this.ch() !== ")") this.fail("expected ')'")
          this.i++
          this.skipLines()
          return this.command()
        }
        this.fail("unexpected '('")
      }
      const substitution = (this.ch() === "<" || this.ch() === ">") && this.src[this.i + 1] === "("
      if (META.has(this.ch()!) && !substitution) break
      if (words.length === 0) {
        const m = ASSIGNMENT.exec(this.src.slice(this.i, this.i + 256))
        if (m !== null) {
          this.i += m[0].length
          assignments.push({ name: m[0].replace(/\+?=$/, ""), value: this.assignedValue() })
          continue
        }
        if (/^[A-Za-z_][A-Za-z0-9_]*\[/.test(this.src.slice(this.i, this.i + 256))) {
          const close = this.src.indexOf("]", this.i)
          if (close > 0 && /^\+?=/.test(this.src.slice(close + 1))) {
            this.fail("array element assignments are not supported")
          }
        }
      }
      const w = this.word()
      if (w.source === "") this.fail(`unexpected '${this.ch()}'`)
      words.push(w)
    }
    this.out.push({ source: this.src.slice(start, this.i).trim(), words, assignments, redirects })
  }

  private assignedValue(): ShellWord {
    if (this.ch() !== "(") return { ...this.word(), splits: false }
    // NAME=(words…): the words are read for what they substitute
    const start = this.i
    this.i++
    for (;;) {
      this.skipLines()
      if (this.ch() === ")") break
      if (this.i >= this.src.length) this.fail("expected ')'")
      const w = this.word()
      if (w.source === "") this.fail(`unexpected '${this.ch()}'`)
      // `a=([n]=v)`: an indexed array's subscript is evaluated as arithmetic, and a name's value there runs commands
      const key = /^\[(.*)\]\+?=/s.exec(w.source)
      if (key !== null && !PLAIN_ARITHMETIC.test(key[1]!)) {
        this.fail("array subscripts other than numbers are not supported")
      }
    }
    this.i++
    return { source: this.src.slice(start, this.i), value: undefined, splits: false }
  }

  /** One word up to an unquoted metacharacter. */
  word(): ShellWord {
    const start = this.i
    let value: string | undefined = ""
    let splits = false
    let globbed = false
    const add = (s: Scanned, quoted: boolean) => {
      if (s.value === undefined) value = undefined
      else if (value !== undefined) value += s.value
      if (s.splits || (!quoted && s.value === undefined)) splits = true
    }
    for (;;) {
      const c = this.ch()
      if (c === undefined) break
      if ((c === "<" || c === ">") && this.src[this.i + 1] === "(" && this.i === start) {
        this.i += 2
        this.list([")"])
        if (this.ch() !== ")") this.fail("expected ')'")
        this.i++
        add({ value: undefined, splits: false }, true)
        continue
      }
      if (c === "(" && this.i > start && "?*+@!".includes(this.src[this.i - 1]!)) {
        this.fail("extended globs are not supported")
      }
      if (META.has(c)) break
      if (c === "\\") {
        if (this.src[this.i + 1] === "\n") this.i += 2
        else {
          if (value !== undefined) value += this.src[this.i + 1] ?? ""
          this.i += 2
        }
      } else if (c === "'") {
        const end = this.src.indexOf("'", this.i + 1)
        if (end < 0) this.fail("unterminated quote")
        if (value !== undefined) value += this.src.slice(this.i + 1, end)
        this.i = end + 1
      } else if (c === "\"") {
        this.i++
        add(this.doubleQuoted(true), true)
      } else if (c === "$" && this.src[this.i + 1] === "\"") {
        this.i += 2
        add(this.doubleQuoted(true), true)
      } else if (c === "$" && this.src[this.i + 1] === "'") {
        add(this.ansiC(), true)
      } else if (c === "$" || c === "`") {
        add(this.expansion(), false)
      } else if (c === "*" || c === "?" || (c === "[" && this.closesBracket())) {
        globbed = true
        if (value !== undefined) value += c
        this.i++
      } else {
        if (value !== undefined) value += c
        this.i++
      }
    }
    const source = this.src.slice(start, this.i)
    const braces = /\{[^{}]*(,|\.\.)[^{}]*\}/.test(source.replace(/'[^']*'|"(\\.|[^"\\])*"|\\./g, ""))
    if (globbed || braces) return { source, value: undefined, splits: true }
    return { source, value, splits }
  }

  /** An unquoted `[` starts a glob when a `]` closes it in the same word. */
  private closesBracket() {
    for (let j = this.i + 1; j < this.src.length && !META.has(this.src[j]!); j++) {
      if (this.src[j] === "]") return true
    }
    return false
  }

  /** The inside of "…" (after the opening quote) or of an unquoted here-document (`closed` false: to the end). */
  doubleQuoted(closed: boolean): Scanned {
    let value: string | undefined = ""
    let splits = false
    for (;;) {
      const c = this.ch()
      if (c === undefined) {
        if (closed) this.fail("unterminated quote")
        break
      }
      if (c === "\"" && closed) {
        this.i++
        break
      }
      if (c === "\\") {
        const n = this.src[this.i + 1]
        if (n === "\n") this.i += 2
        else if (n !== undefined && "$`\"\\".includes(n) && (closed || n !== "\"")) {
          if (value !== undefined) value += n
          this.i += 2
        } else {
          if (value !== undefined) value += "\\"
          this.i++
        }
      } else if (c === "$" || c === "`") {
        const quotedAll = this.at("$@") || this.at("${@") ||
          /^\$\{[A-Za-z_][A-Za-z0-9_]*\[@\]/.test(this.src.slice(this.i))
        const s = this.expansion()
        value = s.value === undefined ? undefined : value === undefined ? undefined : value + s.value
        if (quotedAll) splits = true
      } else {
        if (value !== undefined) value += c
        this.i++
      }
    }
    return { value, splits }
  }

  /** `$…` or a backtick at the current position: what it expands to is unknown, except a lone `$`. */
  private expansion(): Scanned {
    const unknown: Scanned = { value: undefined, splits: true }
    if (this.ch() === "`") {
      let j = this.i + 1
      let inner = ""
      for (;;) {
        const c = this.src[j]
        if (c === undefined) this.fail("unterminated backquote")
        if (c === "\\" && "`$\\".includes(this.src[j + 1] ?? "")) {
          inner += this.src[j + 1]
          j += 2
        } else if (c === "`") break
        else {
          inner += c
          j++
        }
      }
      this.i = j + 1
      readScript(inner, this.out, this.depth + 1)
      return unknown
    }
    const n = this.src[this.i + 1]
    if (n === "[") this.fail("'$[…]' arithmetic is not analysed")
    if (n === "(" && this.src[this.i + 2] === "(") {
      this.arithmetic(3)
      return unknown
    }
    if (n === "(") {
      this.i += 2
      this.list([")"])
      if (this.ch() !== ")") this.fail("expected ')'")
      this.i++
      return unknown
    }
    if (n === "{") {
      const end = this.matching(this.i + 1, "{", "}")
      const inner = this.src.slice(this.i + 2, end)
      if (!PARAMETER.test(inner) && !PARAMETER_OP.test(inner)) {
        this.fail(`the expansion '\${${inner.slice(0, 40)}}' is not analysed`)
      }
      this.i = end + 1
      return unknown
    }
    const name = /^([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])/.exec(this.src.slice(this.i + 1, this.i + 256))
    if (name !== null) {
      this.i += 1 + name[0].length
      return unknown
    }
    this.i++
    return { value: "$", splits: false }
  }

  /** `((…))` or `$((…))`, over numbers only. */
  private arithmetic(open: number) {
    const outer = this.i + open - 2
    const end = this.matching(outer, "(", ")")
    if (this.src[end - 1] !== ")") this.fail("expected '))'")
    const inner = this.src.slice(outer + 2, end - 1)
    if (!PLAIN_ARITHMETIC.test(inner)) this.fail("arithmetic over names or expansions is not analysed")
    this.i = end + 1
  }

  /** The index of the bracket closing the one at `at` (quotes respected). */
  private matching(at: number, open: string, close: string) {
    let depth = 0
    for (let j = at; j < this.src.length; j++) {
      const c = this.src[j]
      if (c === "\\") j++
      else if (c === "'") {
        const end = this.src.indexOf("'", j + 1)
        if (end < 0) break
        j = end
      } else if (c === open) depth++
      else if (c === close && --depth === 0) return j
    }
    return this.fail(`expected '${close}'`)
  }

  /** `$'…'`: its escapes are applied, so `$'\x72m'` is known to be `rm`; `\c` control escapes are unknown. */
  private ansiC(): Scanned {
    let j = this.i + 2
    let value: string | undefined = ""
    const simple: Record<string, string> = {
      n: "\n",
      t: "\t",
      r: "\r",
      a: "\x07",
      b: "\b",
      e: "\x1b",
      E: "\x1b",
      f: "\f",
      v: "\v",
      "\\": "\\",
      "'": "'",
      "\"": "\"",
      "?": "?"
    }
    for (;;) {
      const c = this.src[j]
      if (c === undefined) this.fail("unterminated quote")
      if (c === "'") break
      if (c !== "\\") {
        value = value === undefined ? undefined : value + c
        j++
        continue
      }
      const e = this.src[j + 1] ?? ""
      const code = (re: RegExp, base: number) => {
        const m = re.exec(this.src.slice(j + 2))
        const digits = m?.[0] ?? ""
        j += 2 + digits.length
        if (digits === "") return undefined
        return String.fromCodePoint(parseInt(digits, base))
      }
      let ch: string | undefined
      if (e in simple) {
        ch = simple[e]
        j += 2
      } else if (e === "x") ch = code(/^[0-9a-fA-F]{1,2}/, 16)
      else if (e === "u") ch = code(/^[0-9a-fA-F]{1,4}/, 16)
      else if (e === "U") ch = code(/^[0-9a-fA-F]{1,8}/, 16)
      else if (e >= "0" && e <= "7") {
        const m = /^[0-7]{1,3}/.exec(this.src.slice(j + 1))!
        ch = String.fromCodePoint(parseInt(m[0], 8))
        j += 1 + m[0].length
      } else {
        ch = undefined
        j += 2
      }
      value = value === undefined || ch === undefined ? undefined : value + ch
    }
    this.i = j + 1
    return { value, splits: false }
  }
}

/** A here-document delimiter's text: quotes and backslashes removed; `undefined` when it expands anything. */
const unquoted = (source: string) =>
  /[$`]/.test(source.replace(/'[^']*'/g, "")) ? undefined : source.replace(/'([^']*)'|"([^"]*)"|\\(.)/g, "$1$2$3")

/**
 * Every simple command of the script, in the order met; the start of each top-level statement (to check
 * against the real grammar's). `Unreadable` when the text uses what this reader does not know.
 */
export const readScript = (
  src: string,
  out: Array<SimpleCommand> = [],
  depth = 0
): { readonly commands: Array<SimpleCommand>; readonly starts: Array<number> } => {
  const reader = new Reader(src, out, depth)
  const starts = reader.list([])
  if (reader.i < src.length) throw new Unreadable(`unexpected '${src[reader.i]}' (at character ${reader.i + 1})`)
  if (reader.pending.length > 0) throw new Unreadable("a here-document has no body")
  return { commands: out, starts }
}
