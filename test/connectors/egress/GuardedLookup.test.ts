import { request } from "undici"
import { afterAll, describe, expect, it, vi } from "vitest"

// Scripted DNS for names under `.rebind.test`, so the resolver's answers can be adversarial without any real
// DNS. The guard's answers (`callbacks`) name only loopback, link-local and private addresses, so even a
// broken guard could never dial a public address; `promises` answers feed checkUrl, which never dials.
type Answer = ReadonlyArray<{ address: string; family: number }>
const scripts = vi.hoisted(() => new Map<string, { promises: Array<Answer>; callbacks: Array<Answer> }>())

vi.mock("node:dns", async (importOriginal) => {
  const original = await importOriginal<typeof import("node:dns")>()
  const script = (hostname: string, kind: "promises" | "callbacks") => {
    const entry = scripts.get(hostname)
    const answer = entry?.[kind].length === 1 ? entry[kind][0] : entry?.[kind].shift()
    if (answer === undefined) throw new Error(`no scripted answer for ${hostname}`)
    return answer.map((a) => ({ ...a }))
  }
  const lookup = (hostname: string, options: any, callback: (...args: Array<any>) => void) => {
    if (!hostname.endsWith(".rebind.test")) return original.lookup(hostname, options, callback)
    const answer = script(hostname, "callbacks")
    // the guard always asks for every address; a single-address call would mean it skipped some
    expect(options.all).toBe(true)
    process.nextTick(callback, null, answer)
  }
  const promisesLookup = async (hostname: string, options: any) =>
    hostname.endsWith(".rebind.test")
      ? script(hostname, "promises")
      : original.promises.lookup(hostname, options)
  return { ...original, lookup, promises: { ...original.promises, lookup: promisesLookup } }
})

// test files share their worker's modules (vitest.config.ts): the guard is loaded afresh, so it sees the mock
vi.resetModules()
const { defaultPolicy, parseEgressAllow } = await import("../../../src/connectors/egress/EgressPolicy.js")
const { checkUrl, findEgressRefusal, makeGuardedDispatcher } = await import(
  "../../../src/connectors/egress/GuardedDispatcher.js"
)

const dispatcher = makeGuardedDispatcher(defaultPolicy)
afterAll(() => dispatcher.close())

describe("guarded lookup with adversarial DNS", () => {
  it("refuses a name when any of its addresses is blocked, not only the first", async () => {
    // checkUrl never dials, so its answer may name a public address
    scripts.set("mixed.rebind.test", {
      promises: [[{ address: "93.184.216.34", family: 4 }, { address: "10.0.0.5", family: 4 }]],
      // the first answer is allowlisted; a guard that judged only it would dial 127.0.0.2:1 and get ECONNREFUSED
      callbacks: [[{ address: "127.0.0.2", family: 4 }, { address: "127.0.0.1", family: 4 }]]
    })
    expect(await checkUrl("http://mixed.rebind.test/", defaultPolicy)).toMatchObject({
      host: "mixed.rebind.test",
      address: "10.0.0.5",
      reason: "private"
    })
    const allowing = makeGuardedDispatcher(parseEgressAllow("127.0.0.2"))
    try {
      const error = await request("http://mixed.rebind.test:1/", { dispatcher: allowing }).catch((e: unknown) => e)
      expect(findEgressRefusal(error)).toMatchObject({ address: "127.0.0.1", reason: "loopback" })
    } finally {
      await allowing.close()
    }
  })

  it("catches DNS rebinding: a pre-flight check that passed does not let the connection through", async () => {
    // first answer public (what the pre-flight sees), then the attacker's record flips to metadata
    scripts.set("flip.rebind.test", {
      promises: [[{ address: "93.184.216.34", family: 4 }]],
      callbacks: [[{ address: "169.254.169.254", family: 4 }]]
    })
    expect(await checkUrl("http://flip.rebind.test/", defaultPolicy)).toBeUndefined()
    const error = await request("http://flip.rebind.test/", { dispatcher }).catch((e: unknown) => e)
    expect(findEgressRefusal(error)).toMatchObject({ host: "flip.rebind.test", reason: "cloud metadata" })
  })

  it("judges IPv4-mapped answers by their IPv4 host", async () => {
    scripts.set("mapped.rebind.test", { promises: [], callbacks: [[{ address: "::ffff:192.168.1.10", family: 6 }]] })
    const error = await request("http://mapped.rebind.test/", { dispatcher }).catch((e: unknown) => e)
    expect(findEgressRefusal(error)).toMatchObject({ reason: "private" })
  })

  it("lets an allowlisted CIDR through the resolver path (then the connection itself fails: nothing listens)", async () => {
    scripts.set("ok.rebind.test", { promises: [], callbacks: [[{ address: "127.0.0.1", family: 4 }]] })
    const allowing = makeGuardedDispatcher(parseEgressAllow("127.0.0.0/8"))
    try {
      // port 1 on loopback: refused by the kernel, which proves the guard handed the address to connect()
      const error = await request("http://ok.rebind.test:1/", { dispatcher: allowing }).catch((e: unknown) => e)
      expect(findEgressRefusal(error)).toBeUndefined()
      expect(error).toMatchObject({ code: "ECONNREFUSED" })
    } finally {
      await allowing.close()
    }
  })
})
