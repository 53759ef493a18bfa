import type { ShellWord } from "./ShellWord.js"

export type RuleAction = "allow" | "deny" | "require_approval"

export interface PolicyRule {
  readonly pattern: string
  readonly action: RuleAction
}

export interface Policy {
  readonly default_action: RuleAction
  readonly rules: ReadonlyArray<PolicyRule>
}

/** deny > require_approval > allow. */
export const strictness: Record<RuleAction, number> = { allow: 0, require_approval: 1, deny: 2 }

/** Whether a rule matches: surely, surely not, or maybe (words known only when the command runs). */
type Match = "yes" | "no" | "maybe"

const both = (a: Match, b: Match): Match =>
  a === "no" || b === "no" ? "no" : a === "maybe" || b === "maybe" ? "maybe" : "yes"

type Token =
  | { readonly _tag: "Any" }
  | { readonly _tag: "One" }
  | { readonly _tag: "Char"; readonly c: string }
  | { readonly _tag: "Class"; readonly negated: boolean; readonly body: string }

const tokensOf = (glob: string): ReadonlyArray<Token> => {
  const tokens: Array<Token> = []
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!
    if (c === "*") tokens.push({ _tag: "Any" })
    else if (c === "?") tokens.push({ _tag: "One" })
    else if (c === "\\" && i + 1 < glob.length) tokens.push({ _tag: "Char", c: glob[++i]! })
    else if (c === "[" && glob.indexOf("]", i + 2) > 0) {
      const end = glob.indexOf("]", i + 2)
      const body = glob.slice(i + 1, end)
      const negated = body.startsWith("!") || body.startsWith("^")
      tokens.push({ _tag: "Class", negated, body: negated ? body.slice(1) : body })
      i = end
    } else tokens.push({ _tag: "Char", c })
  }
  return tokens
}

const inClass = (body: string, c: string) => {
  for (let i = 0; i < body.length; i++) {
    if (body[i + 1] === "-" && i + 2 < body.length) {
      if (c >= body[i]! && c <= body[i + 2]!) return true
      i += 2
    } else if (body[i] === c) return true
  }
  return false
}

const matchesOne = (t: Token, c: string) =>
  t._tag === "One" || (t._tag === "Char" && t.c === c) || (t._tag === "Class" && inClass(t.body, c) !== t.negated)

/**
 * A glob over one word: `*` any characters (`/` too), `?` one, `[…]` a class (`[!…]` negated, `a-z` ranges),
 * `\x` literal x. Matched without regular expressions, in time proportional to the word times the glob (a
 * pattern of many `*` cannot make a check slow).
 */
export const globMatch = (glob: string, text: string): boolean => {
  const tokens = tokensOf(glob)
  const chars = [...text]
  let t = 0
  let c = 0
  let star = -1
  let resume = 0
  while (c < chars.length) {
    const token = tokens[t]
    if (token !== undefined && token._tag !== "Any" && matchesOne(token, chars[c]!)) {
      t++
      c++
    } else if (token?._tag === "Any") {
      star = t++
      resume = c
    } else if (star >= 0) {
      t = star + 1
      c = ++resume
    } else return false
  }
  while (tokens[t]?._tag === "Any") t++
  return t === tokens.length
}

/** A pattern's words; a last word `*` stands for any further words, none included. */
export const patternWords = (pattern: string) => pattern.trim().split(/\s+/).filter((w) => w !== "")

const baseName = (path: string) => path.slice(path.lastIndexOf("/") + 1)

const wordMatch = (glob: string, word: ShellWord, first: boolean): Match => {
  if (word.value === undefined) return glob === "*" ? "yes" : "maybe"
  if (globMatch(glob, word.value)) return "yes"
  // `/bin/rm` is `rm` for a rule without a path, but only as far as that rule is strict: maybe, never surely
  if (first && !glob.includes("/") && word.value.includes("/") && globMatch(glob, baseName(word.value))) {
    return "maybe"
  }
  return "no"
}

const matchFrom = (pattern: ReadonlyArray<string>, p: number, words: ReadonlyArray<ShellWord>, w: number): Match => {
  if (p === pattern.length - 1 && pattern[p] === "*" && p > 0) return "yes"
  if (p === pattern.length) {
    // words left over: only words that may expand to nothing leave the match possible
    return w === words.length ? "yes" : words.slice(w).every((x) => x.splits) ? "maybe" : "no"
  }
  if (w === words.length) return "no"
  const word = words[w]!
  if (word.splits) {
    // an unquoted expansion or glob: any number of words, of unknown text
    return "maybe"
  }
  const here = wordMatch(pattern[p]!, word, w === 0)
  return here === "no" ? "no" : both(here, matchFrom(pattern, p + 1, words, w + 1))
}

/** Whether the pattern matches the command's words (after leading assignments). `*` alone matches any command. */
export const matches = (pattern: string, words: ReadonlyArray<ShellWord>): Match => {
  const glob = patternWords(pattern)
  if (glob.length === 1 && glob[0] === "*") return "yes"
  return matchFrom(glob, 0, words, 0)
}

export interface Judgement {
  readonly action: RuleAction
  /** The deciding rule's pattern; `null` for the default action. */
  readonly rule: string | null
}

/**
 * The first matching rule decides. A rule that matches only maybe (a word known when the command runs)
 * does not stop the search: the answer is the strictest of it and whatever comes after, so an unknown word
 * never makes a command less strictly judged than any text it could turn out to be.
 */
export const judge = (policy: Policy, words: ReadonlyArray<ShellWord>): Judgement => {
  const candidates: Array<Judgement> = []
  let settled = false
  for (const rule of policy.rules) {
    const m = matches(rule.pattern, words)
    if (m === "no") continue
    candidates.push({ action: rule.action, rule: rule.pattern })
    if (m === "yes") {
      settled = true
      break
    }
  }
  if (!settled) candidates.push({ action: policy.default_action, rule: null })
  return candidates.reduce((a, b) => strictness[b.action] > strictness[a.action] ? b : a)
}
