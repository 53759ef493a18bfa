import { PLAIN_ARITHMETIC, plainSubscripts, type ShellAssignment, type ShellWord, Unreadable } from "./ShellWord.js"

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

/** The namespace options of unshare and nsenter (each may carry `=file`). */
const NAMESPACES = ["--mount", "--uts", "--ipc", "--net", "--pid", "--user", "--cgroup", "--time"]

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
    case "ionice": {
      const o = options(words, 1, {
        flags: "t",
        withArgument: "cnpPu",
        long: ["--class", "--classdata", "--pid", "--pgid", "--uid", "--ignore"]
      }, "ionice")
      return rest(o.next)
    }
    case "chrt": {
      // `chrt [options] PRIORITY cmd`; with -p it changes a running process and runs nothing
      const o = options(words, 1, { flags: "abdefiopRrmv", withArgument: "TPD" }, "chrt")
      return o.seen.some(([k]) => k === "-p") ? none : rest(o.next + 1)
    }
    case "taskset": {
      // `taskset [-c] MASK cmd`; with -p it changes a running process
      const o = options(
        words,
        1,
        { flags: "acpV", withArgument: "", long: ["--all-tasks", "--cpu-list", "--pid"] },
        name
      )
      return o.seen.some(([k]) => k === "-p" || k === "--pid") ? none : rest(o.next + 1)
    }
    case "numactl":
    case "prlimit":
    case "setpriv":
    case "runcon":
    case "pkexec":
    case "unbuffer":
    case "torsocks":
    case "proxychains":
    case "proxychains4":
    case "catchsegv":
    case "xvfb-run":
    case "dbus-launch":
    case "dbus-run-session":
      // run the command after their options; their options are not analysed (any is refused)
      return rest(options(words, 1, { flags: "", withArgument: "" }, name).next)
    case "chroot": {
      // `chroot [options] NEWROOT [cmd…]`; without a command it runs a shell, judged as chroot itself
      const o = options(
        words,
        1,
        { flags: "", withArgument: "", long: ["--userspec", "--groups", "--skip-chdir"] },
        name
      )
      return rest(o.next + 1)
    }
    case "faketime": {
      const o = options(words, 1, { flags: "m", withArgument: "fp", long: ["--exclude-monotonic"] }, name)
      return rest(o.next + 1)
    }
    case "fakeroot": {
      const o = options(words, 1, {
        flags: "uhv",
        withArgument: "lisb",
        long: ["--lib", "--faked", "--unknown-is-real"]
      }, name)
      return rest(o.next)
    }
    case "flock": {
      // `flock [options] FILE cmd…` or `flock [options] FILE -c 'script'` (run by `sh -c`); `flock FD` runs nothing
      const o = options(words, 1, {
        flags: "sxenuoFh",
        withArgument: "wE",
        long: [
          "--shared",
          "--exclusive",
          "--nonblock",
          "--unlock",
          "--close",
          "--no-fork",
          "--verbose",
          "--timeout",
          "--conflict-exit-code"
        ]
      }, name)
      const command = words[o.next + 1]
      if (command?.value === "-c" || command?.value === "--command") {
        if (o.next + 2 >= words.length) throw new Unreadable("flock -c needs a command")
        return { ...none, scripts: [text(words[o.next + 2]!, "flock's command")] }
      }
      return rest(o.next + 1)
    }
    case "unshare":
    case "nsenter": {
      const o = options(
        words,
        1,
        name === "unshare"
          ? {
            flags: "cfimnpTUurC",
            withArgument: "RwSGl",
            long: [
              ...NAMESPACES,
              "--fork",
              "--kill-child",
              "--mount-proc",
              "--map-root-user",
              "--map-current-user",
              "--map-user",
              "--map-group",
              "--map-auto",
              "--propagation",
              "--setgroups",
              "--root",
              "--wd",
              "--setuid",
              "--setgid",
              "--keep-caps"
            ]
          }
          : {
            flags: "amuinpUCTFZ",
            withArgument: "tSGrw",
            long: [
              ...NAMESPACES,
              "--all",
              "--target",
              "--setuid",
              "--setgid",
              "--preserve-credentials",
              "--root",
              "--wd",
              "--no-fork"
            ]
          },
        name
      )
      return rest(o.next)
    }
    case "valgrind": {
      // every option of valgrind is one word (`--tool=memcheck`, `-q`): the program follows them
      let i = 1
      while (i < words.length && text(words[i]!, "an option of valgrind").startsWith("-")) i++
      return rest(i)
    }
    case "strace":
    case "ltrace": {
      // tracing runs the command; -p attaches to a running process and runs nothing
      const o = options(words, 1, {
        flags: "cCdDfFhiqrtTvVwxyYzZkSL",
        withArgument: "abeEIoOpPsuUXnAl",
        long: ["--follow-forks", "--output", "--trace", "--attach", "--summary", "--string-limit", "--user"]
      }, name)
      return rest(o.next)
    }
    case "sg": {
      // `sg GROUP -c 'script'` or `sg GROUP words…`: either way the words are run by `sh -c`
      const at = words[1]?.value === "-" ? 2 : 1
      if (words.length <= at + 1) return none
      const script = words[at + 1]?.value === "-c"
        ? (at + 2 < words.length ? text(words[at + 2]!, "sg's command") : undefined)
        : words.slice(at + 1).map((w) => text(w, "sg's command")).join(" ")
      if (script === undefined) throw new Unreadable("sg -c needs a command")
      return { ...none, scripts: [script] }
    }
    case "script": {
      // `script -c 'script' [file]` runs the script in a shell; without -c it starts an interactive shell
      const o = options(words, 1, {
        flags: "aefqkh",
        withArgument: "cTIOBmE",
        long: ["--append", "--command", "--return", "--flush", "--force", "--quiet", "--timing", "--log-io"]
      }, name)
      const command = o.seen.find(([k]) => k === "-c" || k === "--command")
      if (command === undefined) return none
      if (command[1] === undefined) throw new Unreadable("script --command needs its value attached (--command=…)")
      return { ...none, scripts: [command[1]] }
    }
    case "parallel":
    case "systemd-run":
    case "firejail":
    case "bwrap":
    case "proot":
    case "capsh":
      throw new Unreadable(`${name} runs commands given in forms the gate does not analyse: not analysed`)
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
    case "hash": {
      // `hash -p /bin/rm ls` makes `ls` run /bin/rm: judged as running that path
      const at = words.findIndex((w, i) => i > 0 && /^-[a-zA-Z]*p$/.test(w.value ?? w.source))
      if (at < 0) return none
      if (at + 1 >= words.length) throw new Unreadable("hash -p needs a path")
      return { ...none, commands: [[words[at + 1]!]] }
    }
    case "enable":
      // `enable -f lib.so name` loads a builtin from a shared object: code the gate never sees
      if (words.some((w, i) => i > 0 && /^-[a-zA-Z]*f/.test(w.value ?? w.source))) {
        throw new Unreadable("enable -f loads a builtin from a file: not analysed")
      }
      return none
    case "compgen":
    case "complete": {
      // `-C cmd` runs cmd; `-W words` expands its words when completing, `$(…)` included
      const scripts: Array<string> = []
      for (let i = 1; i < words.length; i++) {
        const w = words[i]!.value ?? words[i]!.source
        if (w === "-C" || w === "-W") {
          if (i + 1 >= words.length) throw new Unreadable(`${name} ${w} needs a value`)
          const value = text(words[++i]!, `the value of ${name} ${w}`)
          if (w === "-C") scripts.push(value)
          else if (/[$`]/.test(value)) throw new Unreadable(`${name} -W expands its words: not analysed`)
        } else if (/^-[a-zA-Z]*[CW]/.test(w)) throw new Unreadable(`${name} option '${w}' is not analysed`)
      }
      return { ...none, scripts }
    }
    case "let":
      // each word is an arithmetic expression: a name's value in it is evaluated, and `a[$(cmd)]` there runs `cmd`
      if (!words.slice(1).every((w) => w.value !== undefined && PLAIN_ARITHMETIC.test(w.value))) {
        throw new Unreadable("let evaluates names as arithmetic, which can run commands: use numbers only")
      }
      return none
    case "export":
    case "declare":
    case "typeset":
    case "local":
    case "readonly": {
      // the integer attribute makes every later assignment to the name an arithmetic evaluation
      if (words.some((w, i) => i > 0 && /^[-+][A-Za-z]*i/.test(w.value ?? w.source))) {
        throw new Unreadable(`${name} -i makes assignments arithmetic, which can run commands: not analysed`)
      }
      // a nameref to `b[y]` evaluates the subscript wherever the name is used
      if (
        words.some((w, i) => i > 0 && /^[-+][A-Za-z]*n/.test(w.value ?? w.source)) &&
        words.slice(1).some((w) => {
          const m = /^[A-Za-z_][A-Za-z0-9_]*=(.*)$/s.exec(w.value ?? w.source)
          return m !== null && (w.value === undefined || !plainSubscripts(m[1]!))
        })
      ) throw new Unreadable(`${name} -n to a subscript other than a number can run commands: not analysed`)
      // an array's value in parentheses is read again as `(…)`, whose `$(cmd)` and subscripts run: `declare -a
      // b="$v"` with v='($(cmd))'; declare, typeset and local do so for a name that is an array already, too
      const arrays = name === "declare" || name === "typeset" || name === "local" ||
        words.some((w, i) => i > 0 && /^[-+][A-Za-z]*[aA]/.test(w.value ?? w.source))
      if (arrays && words.slice(1).some(arrayValue)) {
        throw new Unreadable(`${name} reads a value in parentheses as an array, which can run commands: not analysed`)
      }
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

/** A `name=value` word whose value is `(…)`, or may be: it begins with an expansion. */
const arrayValue = (w: ShellWord) => {
  const m = /^[A-Za-z_][A-Za-z0-9_]*\+?=(.*)$/s.exec(w.value ?? w.source)
  if (m === null) return false
  if (w.value !== undefined) return /^\(.*\)$/s.test(m[1]!)
  return /^["']*[$`(]/.test(m[1]!)
}

/** Assignments that change what a later command runs or loads: denied wherever they appear. */
const RISKY_NAMES = new Set([
  "PATH",
  "IFS",
  "ENV",
  "BASH_ENV",
  "SHELLOPTS",
  "BASHOPTS",
  "PS0",
  "PS1",
  "PS2",
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

/** Builtins whose words may be variable names: a subscript in a name (`a[$(cmd)]`, `a[y]`) is evaluated, and can run commands. */
const NAME_TAKERS = new Set(["read", "unset", "let", "mapfile", "readarray", "getopts", "wait"])
/** Builtins whose words are names or `name=value` assignments: only a name's subscript is evaluated. */
const DECLARERS = new Set(["declare", "typeset", "local", "export", "readonly"])
/** Builtins that take a name only after an option: `printf -v name`, `test -v name`. */
const NAME_AFTER: Record<string, ReadonlyArray<string>> = { printf: ["-v"], test: ["-v", "-R"], "[": ["-v", "-R"] }

export const subscriptInjection = (words: ReadonlyArray<ShellWord>) => {
  const name = baseName(words[0]) ?? ""
  const texts = words.slice(1).map((w) => w.value ?? w.source)
  const after = NAME_AFTER[name]
  if (!NAME_TAKERS.has(name) && !DECLARERS.has(name) && after === undefined) return false
  if (texts.some((t) => t.includes("[") && /[$`]/.test(t))) return true
  if (NAME_TAKERS.has(name)) return !texts.every(plainSubscripts)
  if (DECLARERS.has(name)) return texts.some((t) => /^[A-Za-z_][A-Za-z0-9_]*\[/.test(t) && !plainSubscripts(t))
  return texts.some((t, i) =>
    (i > 0 && after!.includes(texts[i - 1]!) && !plainSubscripts(t)) ||
    (name === "printf" && t.startsWith("-v") && !plainSubscripts(t.slice(2)))
  )
}

export const riskyAssignment = (name: string) =>
  RISKY_NAMES.has(name) || RISKY_PREFIXES.some((p) => name.toUpperCase().startsWith(p))
