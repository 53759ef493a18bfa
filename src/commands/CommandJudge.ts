import * as Path from "node:path"
import { judge, type Policy, type RuleAction, strictness } from "./PolicyMatch.js"
import { readScript } from "./ShellParser.js"
import { bashSyntax } from "./ShellSyntax.js"
import { literalWord, type ShellRedirect, type ShellWord, Unreadable } from "./ShellWord.js"
import { innerOf, riskyAssignment, subscriptInjection } from "./Wrappers.js"

/** Scripts inside scripts (`sh -c "eval '…'"`) deeper than this are denied. */
const MAX_SCRIPT_DEPTH = 4
/** Simple commands judged in one check, wrapped ones included. */
const MAX_COMMANDS = 500

export interface JudgedCommand {
  /** The words as judged: each word's text when known before the command runs, else as written. */
  readonly words: ReadonlyArray<string>
  readonly decision: RuleAction
  /** The deciding rule's pattern; `null` for the default action or a refusal of the gate itself. */
  readonly rule: string | null
  /** Why the gate denied it regardless of the rules. */
  readonly reason?: string
}

export interface Verdict {
  readonly decision: RuleAction
  readonly rule: string | null
  readonly reason?: string
  readonly commands: ReadonlyArray<JudgedCommand>
}

const shown = (w: ShellWord) => w.value ?? w.source

/** Output to a file is judged as its own command, `>` or `>>` and the file: `> *` in a rule allows every write. */
const FILE_WRITE: Record<string, string> = { ">": ">", ">|": ">", "&>": ">", "<>": ">", ">>": ">>", "&>>": ">>" }
const HARMLESS_TARGET = /^\/dev\/(null|stdout|stderr|tty|fd\/[0-9]+)$/

const writeOf = (r: ShellRedirect): ReadonlyArray<ShellWord> | undefined => {
  const op = r.op.replace(/^[0-9]+/, "")
  const dup = (op === ">&" || op === "<&") && /^([0-9]+-?|-)$/.test(r.target.value ?? "")
  if (dup || op === "<&") return undefined
  const normal = op === ">&" ? ">" : FILE_WRITE[op]
  if (normal === undefined || HARMLESS_TARGET.test(r.target.value ?? "")) return undefined
  // judged as the path it names: `/tmp/../etc/passwd` is `/etc/passwd`, which `> /tmp/*` does not allow
  const value = r.target.value
  const target = value !== undefined && /(^|\/)\.\.(\/|$)/.test(value) ? Path.posix.normalize(value) : value
  return [literalWord(normal), { ...r.target, value: target, splits: false }]
}

const refused = (words: ReadonlyArray<string>, reason: string): JudgedCommand => ({
  words,
  decision: "deny",
  rule: null,
  reason
})

/**
 * Judges shell text against a policy: the real bash grammar must accept it, ShellParser must read it and
 * agree on its statements, and then every simple command in it (nested, wrapped and in scripts given to
 * `sh -c`/`eval` included), every output redirection to a file and every risky assignment is judged. The
 * answer is the strictest of them; text that cannot be read is denied.
 */
export const judgeCommand = async (policy: Policy, text: string, depth = 0): Promise<Verdict> => {
  const syntax = await bashSyntax(text)
  if (syntax._tag === "Invalid") {
    return verdictOf([refused([text], `the shell parser cannot read it: ${syntax.message}`)])
  }
  let read: ReturnType<typeof readScript>
  try {
    read = readScript(text)
  } catch (e) {
    if (e instanceof Unreadable) return verdictOf([refused([text], e.reason)])
    throw e
  }
  if (read.starts.length !== syntax.starts.length || read.starts.some((s, i) => s !== syntax.starts[i])) {
    return verdictOf([refused([text], "its statements could not be told apart with certainty")])
  }
  const out: Array<JudgedCommand> = []

  const words = async (ws: ReadonlyArray<ShellWord>): Promise<void> => {
    if (out.length >= MAX_COMMANDS) throw new Unreadable(`more than ${MAX_COMMANDS} commands`)
    const first = ws[0]!
    if (first.value === undefined || first.splits) {
      out.push(refused(ws.map(shown), "the command's name is not known before it runs"))
      return
    }
    if (subscriptInjection(ws)) {
      out.push(refused(ws.map(shown), "a subscript in a variable name is evaluated, and can run commands"))
      return
    }
    const j = judge(policy, ws)
    out.push({ words: ws.map(shown), decision: j.action, rule: j.rule })
    let inner: ReturnType<typeof innerOf>
    try {
      inner = innerOf(ws)
    } catch (e) {
      if (!(e instanceof Unreadable)) throw e
      out.push(refused(ws.map(shown), e.reason))
      return
    }
    for (const a of inner.assignments) assignment(a.name, a.value)
    for (const c of inner.commands) if (c.length > 0) await words(c)
    for (const script of inner.scripts) {
      if (depth + 1 > MAX_SCRIPT_DEPTH) {
        out.push(refused([script], "scripts are nested too deeply"))
        continue
      }
      const nested = await judgeCommand(policy, script, depth + 1)
      out.push(...nested.commands)
    }
  }

  const assignment = (name: string, value: ShellWord) => {
    if (riskyAssignment(name)) {
      out.push(refused([`${name}=${shown(value)}`], `setting ${name} changes what later commands run or load`))
    }
  }

  try {
    for (const command of read.commands) {
      for (const a of command.assignments) assignment(a.name, a.value)
      for (const r of command.redirects) {
        const write = writeOf(r)
        if (write !== undefined) {
          const j = judge(policy, write)
          out.push({ words: write.map(shown), decision: j.action, rule: j.rule })
        }
      }
      if (command.words.length > 0) await words(command.words)
    }
  } catch (e) {
    if (e instanceof Unreadable) return verdictOf([refused([text], e.reason)])
    throw e
  }
  if (out.length === 0) return verdictOf([refused([text], "it runs no command")])
  return verdictOf(out)
}

/** The strictest of the commands decides, and names the rule (and reason) of the first command that strict. */
const verdictOf = (commands: ReadonlyArray<JudgedCommand>): Verdict => {
  const strictest = commands.reduce((a, b) => strictness[b.decision] > strictness[a.decision] ? b : a)
  return {
    decision: strictest.decision,
    rule: strictest.rule,
    ...(strictest.reason === undefined ? {} : { reason: strictest.reason }),
    commands
  }
}
