import { describe, expect, it } from "vitest"
import { globMatch, matches } from "../../src/commands/PolicyMatch.js"
import { literalWord } from "../../src/commands/ShellWord.js"

const words = (...ws: Array<string>) => ws.map(literalWord)

describe("pattern globs", () => {
  it.each([
    ["*", "anything/with/slashes", true],
    ["npm", "npm", true],
    ["npm", "npmx", false],
    ["test:*", "test:unit", true],
    ["?", "a", true],
    ["?", "ab", false],
    ["[abc]x", "bx", true],
    ["[!abc]x", "bx", false],
    ["[a-c]x", "cx", true],
    ["[a-c]x", "dx", false],
    ["\\*", "*", true],
    ["\\*", "a", false],
    ["*.ts", "src/a.ts", true],
    ["*.ts", "src/a.tsx", false],
    ["a*b*c", "aXXbYYc", true],
    ["a*b*c", "aXXbYY", false]
  ])("%j against %j is %s", (glob, text, expected) => {
    expect(globMatch(glob, text)).toBe(expected)
  })

  it("a pattern of many stars against a long word answers at once (no backtracking blow-up)", () => {
    const started = performance.now()
    expect(globMatch("*a".repeat(200) + "b", "a".repeat(16_000))).toBe(false)
    // generous bound for a busy machine; exponential matching would not finish at all
    expect(performance.now() - started).toBeLessThan(20_000)
  })

  it("each pattern word is one command word; a last `*` is any further words, none included", () => {
    expect(matches("git push *", words("git", "push"))).toBe("yes")
    expect(matches("git push *", words("git", "push", "origin", "main"))).toBe("yes")
    expect(matches("git push", words("git", "push", "origin"))).toBe("no")
    expect(matches("git * main", words("git", "push", "main"))).toBe("yes")
    expect(matches("git * main", words("git", "push", "origin", "main"))).toBe("no")
    expect(matches("*", [])).toBe("yes")
  })
})
