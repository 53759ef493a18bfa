import { describe, expect, it } from "vitest"
import { judgeCommand } from "../../src/commands/CommandJudge.js"
import type { Policy, RuleAction } from "../../src/commands/PolicyMatch.js"

/** A coding agent's everyday policy: read and build freely, push with approval, never force-push or delete. */
const everyday: Policy = {
  default_action: "deny",
  rules: [
    { pattern: "git push --force *", action: "deny" },
    { pattern: "git push -f *", action: "deny" },
    { pattern: "git push *", action: "require_approval" },
    { pattern: "git *", action: "allow" },
    { pattern: "npm run *", action: "allow" },
    { pattern: "npm test", action: "allow" },
    { pattern: "ls *", action: "allow" },
    { pattern: "cat *", action: "allow" },
    { pattern: "grep *", action: "allow" },
    { pattern: "echo *", action: "allow" },
    { pattern: "rm *", action: "deny" },
    { pattern: "> /tmp/*", action: "allow" },
    { pattern: ">> /tmp/*", action: "allow" }
  ]
}

/** The same, with the wrappers themselves allowed: what they run must still be judged. */
const wrappers: Policy = {
  default_action: "deny",
  rules: [
    { pattern: "env *", action: "allow" },
    { pattern: "sudo *", action: "allow" },
    { pattern: "bash -c *", action: "allow" },
    { pattern: "bash *", action: "allow" },
    { pattern: "sh -c *", action: "allow" },
    { pattern: "xargs *", action: "allow" },
    { pattern: "timeout *", action: "allow" },
    { pattern: "nice *", action: "allow" },
    { pattern: "find *", action: "allow" },
    { pattern: "eval *", action: "allow" },
    { pattern: "watch *", action: "allow" },
    { pattern: "su *", action: "allow" },
    { pattern: "setsid *", action: "allow" },
    { pattern: "stdbuf *", action: "allow" },
    { pattern: "printf *", action: "allow" },
    { pattern: "unset *", action: "allow" },
    { pattern: "trap *", action: "allow" },
    { pattern: "mapfile *", action: "allow" },
    { pattern: "git status", action: "allow" },
    { pattern: "rm *", action: "deny" }
  ]
}

/** A deny-list: everything runs but rm, so every way of running rm must be seen. */
const permissive: Policy = { default_action: "allow", rules: [{ pattern: "rm *", action: "deny" }] }

const policies = { everyday, wrappers, permissive }

/** [policy, command, decision]: the adversarial corpus. Each case names the trick it tries. */
const corpus: ReadonlyArray<readonly [keyof typeof policies, string, RuleAction, string]> = [
  ["everyday", "ls -la", "allow", "a plain allowed command"],
  ["everyday", "ls; rm -rf /", "deny", "a second command after ;"],
  ["everyday", "ls;rm -rf /", "deny", "; without spaces"],
  ["everyday", "ls && rm -rf /", "deny", "&&"],
  ["everyday", "ls||rm -rf /", "deny", "|| without spaces"],
  ["everyday", "ls | rm -rf /", "deny", "a pipe"],
  ["everyday", "ls & rm -rf /", "deny", "a background command"],
  ["everyday", "ls\nrm -rf /", "deny", "a newline"],
  ["everyday", "echo $(rm -rf /)", "deny", "command substitution"],
  ["everyday", "echo `rm -rf /`", "deny", "backticks"],
  ["everyday", "echo \"$(rm -rf /)\"", "deny", "substitution inside double quotes"],
  ["everyday", "ls /tmp/\"$(rm x)\"", "deny", "substitution inside a word"],
  ["everyday", "echo $(echo $(rm x))", "deny", "nested substitutions"],
  ["everyday", "(rm -rf /)", "deny", "a subshell"],
  ["everyday", "{ ls; rm -rf /; }", "deny", "a group"],
  ["everyday", "if ls; then rm -rf /; fi", "deny", "an if body"],
  ["everyday", "while ls; do rm x; done", "deny", "a while body"],
  ["everyday", "for f in a b; do rm $f; done", "deny", "a for body"],
  ["everyday", "case a in a) rm x;; esac", "deny", "a case body"],
  ["everyday", "f() { rm -rf /; }; f", "deny", "a function body"],
  ["everyday", "diff <(ls) <(rm x)", "deny", "process substitution"],
  ["everyday", "cat <<EOF\n$(rm -rf /)\nEOF", "deny", "substitution in a here-document"],
  ["everyday", "cat <<'EOF'\n$(rm -rf /)\nEOF", "allow", "a quoted here-document substitutes nothing"],
  ["everyday", "eval \"rm -rf /\"", "deny", "eval"],
  ["everyday", "sh -c 'ls; rm x'", "deny", "sh -c"],
  ["everyday", "$CMD -rf /", "deny", "a variable as the command name"],
  ["everyday", "$(echo rm) -rf /", "deny", "a substitution as the command name"],
  ["everyday", "rm$IFS-rf$IFS/", "deny", "$IFS instead of spaces"],
  ["everyday", "r\"\"m -rf /", "deny", "empty quotes inside the name"],
  ["everyday", "\\rm -rf /", "deny", "a backslash before the name"],
  ["everyday", "'rm' -rf /", "deny", "a quoted name"],
  ["everyday", "$'\\x72m' -rf /", "deny", "an ANSI-C escaped name"],
  ["everyday", "/bin/rm -rf /", "deny", "the command by its path"],
  ["everyday", "{rm,-rf,/}", "deny", "brace expansion into a command"],
  ["everyday", "r?m x", "deny", "a glob in the command name"],
  ["everyday", "git status", "allow", "an allowed git command"],
  ["everyday", "git push origin main", "require_approval", "a push needs approval"],
  ["everyday", "git push --force origin main", "deny", "a force push"],
  ["everyday", "git push $(echo --force) origin", "deny", "an unknown word that could be --force"],
  ["everyday", "git push origin main && git status", "require_approval", "the strictest of the list"],
  ["everyday", "git status > /tmp/out.txt", "allow", "a redirection a rule allows"],
  ["everyday", "git status > ~/.bashrc", "deny", "a redirection to a file no rule allows"],
  ["everyday", "echo hi >> /tmp/log", "allow", "an append a rule allows"],
  ["everyday", "echo hi &> ~/.profile", "deny", "&> to a file"],
  ["everyday", "{ ls; } > ~/.ssh/authorized_keys", "deny", "a redirection of a group"],
  ["everyday", "ls 2>&1 | grep x", "allow", "descriptor duplication is no file"],
  ["everyday", "ls 2>/dev/null", "allow", "/dev/null is no file"],
  ["everyday", "PATH=/tmp/evil git status", "deny", "PATH for one command"],
  ["everyday", "GIT_SSH_COMMAND='rm -rf ~' git push origin", "deny", "GIT_SSH_COMMAND"],
  ["everyday", "LD_PRELOAD=/tmp/x.so ls", "deny", "LD_PRELOAD"],
  ["everyday", "export PATH=/tmp; git status", "deny", "export PATH"],
  ["everyday", "x=$(rm -rf /)", "deny", "a substitution in an assignment"],
  ["everyday", "a=(1 $(rm x)); ls", "deny", "a substitution in an array"],
  ["everyday", "echo ${x:-$(rm -rf /)}", "deny", "a substitution in a parameter default"],
  ["everyday", "echo $((1 + 2))", "allow", "arithmetic over numbers"],
  ["everyday", "echo $((x[$(rm x)]))", "deny", "arithmetic over names can run commands"],
  ["everyday", "[[ $x -eq 1 ]] && ls", "deny", "[[ -eq ]] evaluates its words as arithmetic"],
  ["everyday", "[[ x -eq 1 ]] && ls", "deny", "[[ -eq ]] evaluates a name's value as arithmetic too"],
  ["everyday", "[[ 1 -eq 1 ]] && ls", "allow", "[[ -eq ]] over numbers"],
  ["everyday", "echo $[x]", "deny", "old-style $[…] arithmetic"],
  ["everyday", "alias ls='rm -rf /'", "deny", "an alias"],
  ["everyday", "coproc rm x", "deny", "coproc"],
  ["everyday", "ls (", "deny", "text the parser cannot read"],
  ["everyday", "echo \"unterminated", "deny", "an unterminated quote"],
  ["everyday", "git commit -m 'fix; rm -rf /'", "allow", "a ; inside quotes is text"],
  ["everyday", "echo a\\; rm b", "allow", "an escaped ; is text"],
  ["everyday", "ls # ; rm -rf /", "allow", "a comment"],
  ["everyday", "npm run build && npm test", "allow", "two allowed commands"],
  ["everyday", "npm run build; npm publish", "deny", "the default for an unmatched command"],
  ["everyday", "cat install.sh | sh", "deny", "piping into a shell"],
  ["everyday", "git status |& grep x", "allow", "|&"],
  ["everyday", "! ls", "allow", "negation"],
  ["everyday", "time ls", "allow", "time"],
  ["everyday", "# only a comment", "deny", "nothing to run"],
  ["everyday", `${"( ".repeat(100)}ls${" )".repeat(100)}`, "deny", "nesting past the reader's limit"],
  ["wrappers", "env X=1 git status", "allow", "env with an assignment"],
  ["wrappers", "env X=1 rm -rf /", "deny", "env runs rm"],
  ["wrappers", "env -i PATH=/tmp git status", "deny", "env setting PATH"],
  ["wrappers", "env -S 'rm x'", "deny", "env -S splits a string: unread"],
  ["wrappers", "sudo -u bob git status", "allow", "sudo with an option"],
  ["wrappers", "sudo rm -rf /", "deny", "sudo runs rm"],
  ["wrappers", "sudo -s rm x", "deny", "sudo -s runs a shell"],
  ["wrappers", "bash -c 'git status'", "allow", "bash -c with an allowed script"],
  ["wrappers", "bash -c 'git status; rm x'", "deny", "bash -c with a denied command"],
  ["wrappers", "sh -ec 'rm x'", "deny", "-c among other flags"],
  ["wrappers", "bash --rcfile x -c 'rm y'", "deny", "-c after an option that takes a value"],
  ["wrappers", "bash -c -- 'rm y'", "deny", "-c --"],
  ["wrappers", "sh -c \"$X\"", "deny", "a script not known before it runs"],
  ["wrappers", "eval 'git status'", "allow", "eval of an allowed command"],
  ["wrappers", "eval \"sh -c 'rm x'\"", "deny", "a script in a script"],
  ["wrappers", "ls | xargs rm", "deny", "xargs runs rm"],
  ["wrappers", "xargs -I{} {} --help < list", "deny", "xargs -I: the command name comes from the input"],
  ["wrappers", "find . -name '*.o' -exec rm {} +", "deny", "find -exec"],
  ["wrappers", "timeout 10 rm x", "deny", "timeout runs rm"],
  ["wrappers", "nice -n 5 git status", "allow", "nice runs an allowed command"],
  ["wrappers", "sudo env nice rm x", "deny", "wrappers in wrappers"],
  ["wrappers", "sudo busybox rm x", "deny", "busybox runs its applet"],
  ["wrappers", "watch -n 1 'git status; rm x'", "deny", "watch hands its words to sh -c"],
  ["wrappers", "watch -n 5 git status", "allow", "watch of an allowed command"],
  ["wrappers", "su bob -c 'rm x'", "deny", "su -c"],
  ["wrappers", "setsid rm x", "deny", "setsid runs rm"],
  ["wrappers", "stdbuf -o0 rm x", "deny", "stdbuf runs rm"],
  ["permissive", "ionice -c 3 rm x", "deny", "ionice runs rm"],
  ["permissive", "chrt -f 10 rm x", "deny", "chrt runs rm after the priority"],
  ["permissive", "chrt -p 10 1234", "allow", "chrt -p changes a running process"],
  ["permissive", "taskset -c 0 rm x", "deny", "taskset runs rm after the mask"],
  ["permissive", "flock /tmp/lock rm x", "deny", "flock runs rm"],
  ["permissive", "flock -w 5 /tmp/lock -c 'rm x'", "deny", "flock -c hands its command to sh -c"],
  ["permissive", "flock -n /tmp/lock make", "allow", "flock of an allowed command"],
  ["permissive", "chroot /srv/root rm x", "deny", "chroot runs rm in the new root"],
  ["permissive", "unshare -r --net rm x", "deny", "unshare runs rm"],
  ["permissive", "nsenter -t 1 -m rm x", "deny", "nsenter runs rm"],
  ["permissive", "strace -f -o /tmp/t rm x", "deny", "strace runs rm"],
  ["permissive", "ltrace rm x", "deny", "ltrace runs rm"],
  ["permissive", "valgrind --tool=memcheck -q rm x", "deny", "valgrind runs rm"],
  ["permissive", "fakeroot -- rm x", "deny", "fakeroot runs rm"],
  ["permissive", "faketime '2020-01-01' rm x", "deny", "faketime runs rm after its time"],
  ["permissive", "sg staff -c 'rm x'", "deny", "sg -c hands its command to sh -c"],
  ["permissive", "sg staff rm x", "deny", "sg hands its words to sh -c too"],
  ["permissive", "script -q -c 'rm x' /dev/null", "deny", "script -c runs its command in a shell"],
  ["permissive", "pkexec rm x", "deny", "pkexec runs rm"],
  ["permissive", "numactl --interleave=all rm x", "deny", "an option of a wrapper the gate does not analyse"],
  ["permissive", "parallel rm ::: a b", "deny", "parallel builds commands from its arguments"],
  ["permissive", "nohup ionice -c3 nice timeout 5 ls", "allow", "wrappers of an allowed command"],
  ["wrappers", "printf -v 'a[$(rm x)]' %s 1", "deny", "an array subscript in a variable name runs commands"],
  ["wrappers", "unset 'a[$(rm x)]'", "deny", "unset evaluates subscripts too"],
  ["wrappers", "trap 'rm -rf /' EXIT", "deny", "a trap runs its text later"],
  ["wrappers", "trap 'git status' EXIT", "allow", "a trap of an allowed command"],
  ["wrappers", "mapfile -C 'rm x' -c 1 a < list", "deny", "mapfile's callback is a command"],
  // a name's value in arithmetic is evaluated again: `y='a[$(rm x)]'` runs rm wherever `y` is evaluated
  ["permissive", "y='a[$(rm x)]'; echo ${s:0:y}", "deny", "a substring length is arithmetic over a name"],
  ["permissive", "echo ${s:1:2}", "allow", "a substring with numbers only"],
  ["permissive", "y='a[$(rm x)]'; let y", "deny", "let evaluates a name"],
  ["permissive", "let 1+1", "allow", "let over numbers only"],
  ["permissive", "declare -i z; z='a[$(rm x)]'", "deny", "the integer attribute makes an assignment arithmetic"],
  ["permissive", "y='a[$(rm x)]'; a=([y]=1)", "deny", "an indexed array's subscript in a compound assignment"],
  ["permissive", "a=([0]=1 [1]=2); echo ok", "allow", "numeric subscripts in a compound assignment"],
  ["permissive", "y='a[$(rm x)]'; unset 'b[y]'", "deny", "unset evaluates a subscript naming a variable"],
  ["permissive", "y='a[$(rm x)]'; printf -v 'b[y]' x", "deny", "printf -v evaluates the subscript"],
  ["permissive", "y='a[$(rm x)]'; read 'b[y]' <<< x", "deny", "read evaluates the subscript"],
  ["permissive", "y='a[$(rm x)]'; test -v 'b[y]'", "deny", "test -v evaluates the subscript"],
  ["permissive", "y='a[$(rm x)]'; echo; [[ -v b[y] ]]", "deny", "[[ -v ]] evaluates the subscript"],
  ["permissive", "declare -a b='($(rm x))'", "deny", "an array value in quotes is read again as (…)"],
  ["permissive", "v='($(rm x))'; declare -a b; declare b=\"$v\"", "deny", "a value that may be (…), for an array"],
  ["permissive", "readonly -a b='([y]=1)'", "deny", "readonly -a reads (…) too"],
  ["permissive", "declare b=\"x$v\"; export c=\"$v\"; local d=1", "allow", "values that cannot be (…)"],
  ["permissive", "declare -n r='b[y]'; echo $r", "deny", "a nameref's subscript is evaluated when it is used"],
  ["permissive", "declare -n r=b; local -n s='b[1]'", "allow", "namerefs to a name or a numeric subscript"],
  ["permissive", "hash -p /bin/rm ls; ls", "deny", "hash -p makes a name run another program"],
  ["permissive", "hash -r; ls", "allow", "hash without -p"],
  ["permissive", "enable -f ./evil.so rm2", "deny", "enable -f loads code from a file"],
  ["permissive", "compgen -C 'rm -rf /' x", "deny", "compgen -C runs its command"],
  ["permissive", "complete -C 'rm -rf /' ls", "deny", "complete -C runs its command when completing"],
  ["permissive", "compgen -W '$(rm -rf /)' x", "deny", "compgen -W expands its words"],
  ["permissive", "compgen -W 'start stop' st", "allow", "compgen -W with plain words"],
  ["permissive", "PS1='$(rm -rf /)' bash -i", "deny", "a prompt expands command substitutions"],
  [
    "permissive",
    "unset 'a[1]'; read -p 'ok [y/n] ' r; printf 'a[%s]' x",
    "allow",
    "numeric subscripts and brackets in text"
  ]
]

describe("the command gate's adversarial corpus", () => {
  it("has at least 40 cases", () => {
    expect(corpus.length).toBeGreaterThanOrEqual(40)
  })

  it.each(corpus)("%s policy: %j is %s (%s)", async (policy, command, expected) => {
    const verdict = await judgeCommand(policies[policy], command)
    expect(verdict.decision, JSON.stringify(verdict)).toBe(expected)
  })
})

describe("what a verdict reports", () => {
  it("lists every simple command with its own decision and rule", async () => {
    const v = await judgeCommand(everyday, "git status && echo $(rm -rf /) > /tmp/out")
    expect(v.decision).toBe("deny")
    expect(v.rule).toBe("rm *")
    expect(v.commands.map((c) => [c.words.join(" "), c.decision, c.rule])).toEqual([
      ["git status", "allow", "git *"],
      ["rm -rf /", "deny", "rm *"],
      ["> /tmp/out", "allow", "> /tmp/*"],
      ["echo $(rm -rf /)", "allow", "echo *"]
    ])
  })

  it("judges a write's target as the path it names, `..` resolved", async () => {
    const v = await judgeCommand(everyday, "echo hi > /tmp/../etc/passwd")
    expect(v.decision).toBe("deny")
    expect(v.commands.map((c) => [c.words.join(" "), c.decision])).toContainEqual(["> /etc/passwd", "deny"])
    expect((await judgeCommand(everyday, "echo hi > /tmp/a/../b")).decision).toBe("allow")
  })

  it("judges at most 500 simple commands in one text", async () => {
    expect((await judgeCommand(everyday, "ls;".repeat(500))).decision).toBe("allow")
    const over = await judgeCommand(everyday, "ls;".repeat(501))
    expect(over).toMatchObject({ decision: "deny", rule: null, reason: "more than 500 commands" })
  })

  it("says why the gate itself denied, with no rule", async () => {
    const v = await judgeCommand(everyday, "$CMD x")
    expect(v).toMatchObject({ decision: "deny", rule: null, reason: "the command's name is not known before it runs" })
    const unread = await judgeCommand(everyday, "ls (")
    expect(unread.rule).toBeNull()
    expect(unread.reason).toMatch(/^the shell parser cannot read it/)
  })

  it("judges an unknown word as strictly as any text it could be: a later allow cannot win over a maybe-deny", async () => {
    const policy: Policy = {
      default_action: "allow",
      rules: [{ pattern: "git push --force *", action: "deny" }, { pattern: "git *", action: "allow" }]
    }
    expect((await judgeCommand(policy, "git push \"$FLAG\" origin")).decision).toBe("deny")
    expect((await judgeCommand(policy, "git push origin \"$BRANCH\"")).decision).toBe("allow")
  })

  it("a last `*` matches no further words too; other words match exactly one word each", async () => {
    const policy: Policy = {
      default_action: "deny",
      rules: [{ pattern: "git push *", action: "allow" }, { pattern: "npm run test:*", action: "allow" }]
    }
    expect((await judgeCommand(policy, "git push")).decision).toBe("allow")
    expect((await judgeCommand(policy, "npm run test:unit")).decision).toBe("allow")
    expect((await judgeCommand(policy, "npm run test:unit --watch")).decision).toBe("deny")
  })
})
