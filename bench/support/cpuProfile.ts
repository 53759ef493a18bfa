import * as Fs from "node:fs"
import * as Module from "node:module"
import * as Path from "node:path"

/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and prints where the time went: self time per function
 * (file:line, 1-based) and per package or source folder, and the inclusive time of the project's own
 * functions. tsx runs TypeScript as whitespace-minified code (one line per file), so positions in .ts
 * files are mapped back by transpiling the file again with tsx's esbuild options and its source map.
 *
 *   node --import tsx bench/support/cpuProfile.ts FILE.cpuprofile [--from US --to US] [--top N] [--callers NAME]
 *
 * --callers NAME: the heaviest call stacks (innermost first) of the functions called NAME (or at FILE:LINE), instead.
 *
 * --from/--to keep the samples in a window of the monotonic clock, in microseconds (what
 * process.hrtime.bigint() / 1000n reads in any process on the host, and what V8 stamps samples with):
 * BENCH_CPU_PROF runs of bench/connectors.ts print the window of each measurement, so start-up and
 * shutdown can be left out.
 */
interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}
interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly endTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const args = process.argv.slice(2)
const option = (name: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
const file = args.find((a, i) => !a.startsWith("--") && (i === 0 || !args[i - 1]!.startsWith("--")))
if (file === undefined) {
  console.error("usage: cpuProfile.ts FILE.cpuprofile [--from US --to US] [--top N] [--callers NAME]")
  process.exit(2)
}
const from = Number(option("--from") ?? Number.NEGATIVE_INFINITY)
const to = Number(option("--to") ?? Number.POSITIVE_INFINITY)
const top = Number(option("--top") ?? 30)

const profile = JSON.parse(Fs.readFileSync(file, "utf8")) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

const repo = process.cwd()

/** esbuild comes with tsx; the options are tsx's (tsx/dist, `transformEsm`), so the columns match. */
type Transform = (source: string, options: Record<string, unknown>) => { readonly map: string }
const esbuild = await import("esbuild" as string).then(
  (m: { transformSync: Transform }) => m.transformSync,
  () => undefined
)
const maps = new Map<string, Module.SourceMap | undefined>()
const sourceMap = (file: string) => {
  if (!maps.has(file)) {
    let map: Module.SourceMap | undefined
    try {
      const { map: json } = esbuild!(Fs.readFileSync(file, "utf8"), {
        target: `node${process.versions.node}`,
        loader: "ts",
        format: "esm",
        sourcefile: file,
        sourcemap: true,
        minifyWhitespace: true,
        keepNames: true,
        tsconfigRaw: Fs.readFileSync(Path.join(repo, "tsconfig.json"), "utf8")
      })
      map = new Module.SourceMap(JSON.parse(json))
    } catch {
      map = undefined
    }
    maps.set(file, map)
  }
  return maps.get(file)
}

/** file:line (1-based) of a frame's function, in the TypeScript source where it can be mapped. */
const where = (f: CallFrame) => {
  const url = f.url.replace(/^file:\/\//, "").replace(/\?.*$/, "")
  const short = url.startsWith(repo) ? Path.relative(repo, url) : url
  if (short === "") return ""
  if (esbuild !== undefined && /\.m?ts$/.test(url) && !url.includes("node_modules")) {
    const entry = sourceMap(url)?.findEntry(f.lineNumber, f.columnNumber)
    if (entry !== undefined && "originalLine" in entry) return `${short}:${entry.originalLine + 1}`
    return `${short}:?(col ${f.columnNumber})`
  }
  return `${short}:${f.lineNumber + 1}`
}
/** node_modules/<package> (scoped too), the source folder, or node's internals. */
const area = (f: CallFrame) => {
  const url = f.url.replace(/^file:\/\//, "")
  if (url === "") return f.functionName.startsWith("(") ? f.functionName : "(native/V8)"
  if (url.startsWith("node:")) return "node: internals"
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (pkg) return pkg[1]!
  const rel = url.startsWith(repo) ? Path.relative(repo, url) : url
  return Path.dirname(rel)
}

const selfUs = new Map<number, number>()
let total = 0
let t = profile.startTime
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i]!
  if (t < from || t > to) continue
  const dt = profile.timeDeltas[i + 1] ?? 0
  const id = profile.samples[i]!
  selfUs.set(id, (selfUs.get(id) ?? 0) + dt)
  total += dt
}

const sum = (key: (n: ProfileNode) => string) => {
  const out = new Map<string, number>()
  for (const [id, us] of selfUs) {
    const k = key(byId.get(id)!)
    out.set(k, (out.get(k) ?? 0) + us)
  }
  return [...out].sort((a, b) => b[1] - a[1])
}

const pct = (us: number) => `${((100 * us) / Math.max(1, total)).toFixed(1).padStart(5)}%`

const callersOf = option("--callers")
if (callersOf !== undefined) {
  const stacks = new Map<string, number>()
  let matched = 0
  for (const [id, us] of selfUs) {
    const frames: Array<string> = []
    let hit = false
    for (let n: number | undefined = id; n !== undefined && frames.length < 14; n = parent.get(n)) {
      const f = byId.get(n)!.callFrame
      if (!hit && f.functionName !== callersOf && !where(f).endsWith(callersOf)) continue
      hit = true
      if (f.functionName === "(root)") break
      frames.push(`${f.functionName || "(anonymous)"} ${where(f)}`)
    }
    if (!hit) continue
    matched += us
    const k = frames.join("\n      <- ")
    stacks.set(k, (stacks.get(k) ?? 0) + us)
  }
  console.log(
    `${callersOf}: ${pct(matched)} of the window (self time of it and everything it calls that was sampled inside it)\n`
  )
  for (const [k, us] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, Math.min(top, 8))) {
    console.log(`  ${pct(us)}  ${k}\n`)
  }
  process.exit(0)
}

const idle = sum((n) => n.callFrame.functionName).find(([k]) => k === "(idle)")?.[1] ?? 0
console.log(
  `${Path.basename(file)}: ${(total / 1e6).toFixed(2)} s sampled in the window, ${
    ((100 * idle) / Math.max(1, total)).toFixed(1)
  }% idle\n`
)
console.log(`Self time by function (top ${top}):`)
for (const [k, us] of sum((n) => `${n.callFrame.functionName || "(anonymous)"}  ${where(n.callFrame)}`).slice(0, top)) {
  console.log(`  ${pct(us)}  ${k}`)
}
console.log(`\nSelf time by package / folder:`)
for (const [k, us] of sum((n) => area(n.callFrame)).slice(0, 20)) console.log(`  ${pct(us)}  ${k}`)

// inclusive time of our own functions: the stack of each sample, each frame counted once
const inclusive = new Map<string, number>()
for (const [id, us] of selfUs) {
  const seen = new Set<string>()
  for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
    const f = byId.get(n)!.callFrame
    if (!/\/(src|schema|cluster)\//.test(f.url) || f.url.includes("node_modules")) continue
    const k = `${f.functionName || "(anonymous)"}  ${where(f)}`
    if (seen.has(k)) continue
    seen.add(k)
    inclusive.set(k, (inclusive.get(k) ?? 0) + us)
  }
}
console.log(`\nInclusive time of the project's own functions (top ${top}):`)
for (const [k, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${k}`)
