import { type ShellAssignment, type ShellWord, Unreadable } from "./ShellWord.js"

/** What a command runs besides itself: another command (its words), or a script to read again. */
export interface Inner {
  readonly commands: ReadonlyArray<ReadonlyArray<ShellWord>>
  readonly scripts: ReadonlyArray<string>
  readonly assignments: ReadonlyArray<ShellAssignment>
}

const none: Inner = { commands: [], scripts: [], assignments: [] }
const unknownInput: ShellWord = { source: "<input>", value: undefined, splits: true }

const baseName = (w: ShellWord | undefined) => w?.value?.slice(w.value.lastIndexOf("/") + 1)

const text = (w: ShellWord, what: string) => {
  if (w.value === undefined) throw new Unreadable(`${what} is not known before it runs: '${w.source}'`)
  return w.value
}

/**
 * Reads a wrapper's options: `flags` take no argument, `withArgument` take the next word (or an attached
 * value), long options may carry `=value`. Stops at `--` or the first word that is not an option; an
 * unknown option is Unreadable (it might take the command as its argument).
 */
const options = (
  words: ReadonlyArray<ShellWord>,
  from: number,
  spec: { readonly flags: string; readonly withArgument: string; readonly long?: ReadonlyArray<string> },
  name: string
) => {
  let i = from
  const seen: Array<[string, string | undefined]> = []
  while (i < words.length) {
    const w = text(words[i]!, `an option of ${name}`)
    if (w === "--") return { next: i + 1, seen }
    if (!w.startsWith("-") || w === "-") break
    if (w.startsWith("--")) {
      const [key, value] = w.split(/=(.*)/s, 2) as [string, string | undefined]
      if (!(spec.long ?? []).includes(key)) throw new Unreadable(`${name} option '${key}' is not analysed`)
      seen.push([key, value])
      i++
      continue
    }
    let j = 1
    for (; j < w.length; j++) {
      const f = w[j]!
      if (spec.withArgument.includes(f)) {
        const attached = w.slice(j + 1)
        if (attached === "") {
          i++
          if (i >= words.length) throw new Unreadable(`${name} -${f} needs a value`)
          seen.push([`-${f}`, text(words[i]!, `the value of ${name} -${f}`)])
        } else seen.push([`-${f}`, attached])
        break
      }
      if (!spec.flags.includes(f)) throw new Unreadable(`${name} option '-${f}' is not analysed`)
      seen.push([`-${f}`, undefined])
    }
    i++
  }
  return { next: i, seen }
}

const assignmentsFrom = (words: ReadonlyArray<ShellWord>, from: number) => {
  const assignments: Array<ShellAssignment> = []
  let i = from
  for (; i < words.length; i++) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(words[i]!.value ?? "")
    if (m === null) break
    assignments.push({ name: m[1]!, value: { ...words[i]!, value: words[i]!.value!.slice(m[0].length) } })
  }
  return { next: i, assignments }
}

const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh"])

/**
 * The commands a command runs on behalf of its words: `env X=1 cmd`, `sudo cmd`, `xargs cmd`, `find -exec
 * cmd ;`, `sh -c 'script'`, `eval 'script'` and the like. Each is judged as well as the wrapper itself.
 */
export const innerOf = (words: ReadonlyArray<ShellWord>): Inner => {
  const name = baseName(words[0])
  const rest = (from: number, assignments: ReadonlyArray<ShellAssignment> = []): Inner =>
    from < words.length ? { commands: [words.slice(from)], scripts: [], assignments } : { ...none, assignments }
  switch (name) {
    case "env": {
      const o = options(words, 1, {
        flags: "i0v",
        withArgument: "uC",
        long: ["--ignore-environment", "--null", "--unset", "--chdir"]
      }, "env")
      const a = assignmentsFrom(words, o.next)
      return rest(a.next, a.assignments)
    }
    case "busybox":
      // a multi-call binary: `busybox rm …` is `rm …`
      return rest(1)
    case "command":
    case "builtin":
    case "nohup":
      return rest(options(words, 1, { flags: name === "command" ? "pvV" : "", withArgument: "" }, name).next)
    case "exec":
      return rest(options(words, 1, { flags: "cl", withArgument: "a" }, "exec").next)
    case "setsid":
      return rest(options(words, 1, { flags: "cfw", withArgument: "" }, "setsid").next)
    case "stdbuf":
      return rest(
        options(words, 1, { flags: "", withArgument: "ioe", long: ["--input", "--output", "--error"] }, "stdbuf").next
      )
    case "su":
    case "runuser": {
      // `su [user] -c 'script'`: the script runs in the user's shell
      const at = words.findIndex((w, i) => i > 0 && (w.value === "-c" || w.value === "--command"))
      const inline = words.find((w) => w.value?.startsWith("--command="))
      if (inline !== undefined) return { ...none, scripts: [text(inline, `${name}'s command`).slice(10)] }
      if (at < 0) return none
      if (at + 1 >= words.length) throw new Unreadable(`${name} -c needs a script`)
      return { ...none, scripts: [text(words[at + 1]!, `${name}'s command`)] }
    }
    case "watch": {
      const o = options(words, 1, {
        flags: "bcdeghptx",
        withArgument: "nq",
        long: [
          "--interval",
          "--differences",
          "--no-title",
          "--beep",
          "--errexit",
          "--exec",
          "--chgexit",
          "--precise",
          "--color"
        ]
      }, "watch")
      if (o.seen.some(([k]) => k === "-x" || k === "--exec")) return rest(o.next)
      // without -x, watch hands its words to `sh -c` joined by spaces
      const script = words.slice(o.next).map((w) => text(w, "watch's command")).join(" ")
      return script === "" ? none : { ...none, scripts: [script] }
    }
    case "time":
      return rest(options(words, 1, { flags: "p", withArgument: "" }, "time").next)
    case "nice": {
      const o = options(words, 1, { flags: "0123456789", withArgument: "n", long: ["--adjustment"] }, "nice")
      return rest(o.next)
    }
    case "timeout": {
      const o = options(words, 1, {
        flags: "v",
        withArgument: "sk",
        long: ["--signal", "--kill-after", "--preserve-status", "--foreground", "--verbose"]
      }, "timeout")
      return rest(o.next + 1)
    }
    case "sudo":
    case "doas": {
      const o = options(words, 1, {
        flags: "AbBEHKknPSlv",
        withArgument: "ugCDhprtTUs",
        long: ["--preserve-env", "--login", "--non-interactive", "--user", "--group"]
      }, name)
      if (o.seen.some(([k]) => k === "-s" || k === "-i" || k === "--login")) {
        throw new Unreadable(`${name} -s/-i runs a shell: not analysed`)
      }
      const a = assignmentsFrom(words, o.next)
      return rest(a.next, a.assignments)
    }
    case "xargs": {
      const o = options(words, 1, {
        flags: "0rtpx",
        withArgument: "ILnPsdEa",
        long: [
          "--null",
          "--no-run-if-empty",
          "--verbose",
          "--interactive",
          "--exit",
          "--max-args",
          "--max-procs",
          "--delimiter",
          "--arg-file",
          "--max-chars",
          "--eof"
        ]
      }, "xargs")
      const replace = o.seen.find(([k]) => k === "-I")?.[1]
      const inner = o.next < words.length ? words.slice(o.next) : [{ source: "echo", value: "echo", splits: false }]
      // with -I, the replacement string stands for an input line wherever it appears
      const filled = replace === undefined
        ? [...inner, unknownInput]
        : inner.map((w) => w.value?.includes(replace) ? { ...w, value: undefined } : w)
      return { commands: [filled], scripts: [], assignments: [] }
    }
    case "find": {
      const commands: Array<Array<ShellWord>> = []
      for (let i = 1; i < words.length; i++) {
        if (!["-exec", "-execdir", "-ok", "-okdir"].includes(words[i]!.value ?? "")) continue
        const end = words.findIndex((w, j) => j > i && (w.value === ";" || w.value === "+"))
        const last = end < 0 ? words.length : end
        commands.push(words.slice(i + 1, last).map((w) => w.value?.includes("{}") ? { ...w, value: undefined } : w))
        i = last
      }
      return { commands, scripts: [], assignments: [] }
    }
    case "trap": {
      // `trap 'script' SIGNAL…`: the script runs later, when the signal comes
      const first = words[1]?.value === "--" ? 2 : 1
      const action = words[first]
      if (action === undefined || /^-[lp]$/.test(action.value ?? "") || words.length < first + 2) return none
      const script = text(action, "trap's command")
      return script === "-" || script === "" ? none : { ...none, scripts: [script] }
    }
    case "mapfile":
    case "readarray": {
      // `-C callback` evaluates the callback as a command every few lines
      const at = words.findIndex((w, i) => i > 0 && w.value === "-C")
      if (at < 0 && !words.some((w) => /^-[a-zA-Z]*C./.test(w.value ?? w.source))) return none
      if (at < 0 || at + 1 >= words.length) throw new Unreadable(`${name} -C is not analysed`)
      return { ...none, scripts: [text(words[at + 1]!, `${name}'s callback`)] }
    }
    case "eval":
      return { ...none, scripts: words.length > 1 ? [words.slice(1).map((w) => text(w, "eval's text")).join(" ")] : [] }
    case "alias":
      // an alias runs its text later: read now
      return {
        ...none,
        scripts: words.slice(1).flatMap((w) => {
          const t = text(w, "an alias")
          const eq = t.indexOf("=")
          return eq < 0 ? [] : [t.slice(eq + 1)]
        })
      }
    case "export":
    case "declare":
    case "typeset":
    case "local":
    case "readonly": {
      const assignments = words.slice(1).flatMap((w): Array<ShellAssignment> => {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)\+?=/.exec(w.value ?? w.source)
        return m === null ? [] : [{ name: m[1]!, value: w }]
      })
      return { ...none, assignments }
    }
  }
  if (name !== undefined && SHELLS.has(name)) {
    // any `-c`-like word, wherever it is (`bash --rcfile x -c …`): reading too much as a script only judges more
    const at = words.findIndex((w, i) => i > 0 && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(w.value ?? ""))
    if (at < 0) return none
    const scriptAt = words[at + 1]?.value === "--" ? at + 2 : at + 1
    if (scriptAt >= words.length) throw new Unreadable(`${name} -c needs a script`)
    return { ...none, scripts: [text(words[scriptAt]!, `the script of ${name} -c`)] }
  }
  return none
}

/** Assignments that change what a later command runs or loads: denied wherever they appear. */
const RISKY_NAMES = new Set([
  "PATH",
  "IFS",
  "ENV",
  "BASH_ENV",
  "SHELLOPTS",
  "BASHOPTS",
  "PS4",
  "PROMPT_COMMAND",
  "HOME",
  "XDG_CONFIG_HOME",
  "EDITOR",
  "VISUAL",
  "PAGER",
  "MANPAGER",
  "LESSOPEN",
  "LESSCLOSE",
  "SSH_ASKPASS",
  "NODE_OPTIONS",
  "NODE_PATH",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "CDPATH",
  "GLOBIGNORE",
  "BROWSER",
  "SHELL",
  "TMPDIR"
])
const RISKY_PREFIXES = ["LD_", "DYLD_", "GIT_", "BASH_FUNC_", "NPM_CONFIG_", "PYTHON", "PERL", "RUBY"]

/** Builtins that take variable names: a subscript in a name (`a[$(cmd)]`) is evaluated, and can run commands. */
const NAME_TAKERS = new Set([
  "printf",
  "read",
  "unset",
  "declare",
  "typeset",
  "local",
  "export",
  "readonly",
  "let",
  "mapfile",
  "readarray",
  "getopts",
  "wait",
  "test",
  "["
])

export const subscriptInjection = (words: ReadonlyArray<ShellWord>) =>
  NAME_TAKERS.has(baseName(words[0]) ?? "") && words.slice(1).some((w) => {
    const t = w.value ?? w.source
    return t.includes("[") && /[$`]/.test(t)
  })

export const riskyAssignment = (name: string) =>
  RISKY_NAMES.has(name) || RISKY_PREFIXES.some((p) => name.toUpperCase().startsWith(p))
