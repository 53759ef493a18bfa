import * as esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"

const ROOT = Path.resolve(import.meta.dirname, "../..")
/** Inside node_modules, so the packages left out of the bundle resolve as they do for bin/switchyard.js. */
const CACHE = Path.join(ROOT, "node_modules", ".cache", "switchyard-test-cli")

/**
 * Packages compiled into the bundle: Effect is most of the hundreds of modules a command loads. The rest
 * stay in node_modules, loaded from there as the bin loads them (some read their own files: binaries,
 * WebAssembly, workers).
 */
const BUNDLED =
  /^(effect|@effect\/[^/]+|@standard-schema\/spec|fast-check|find-my-way-ts|multipasta|ini|toml|mime)(\/|$)/

/**
 * What the bin does with tsx, done once ahead of time: bin/switchyard.js and the TypeScript it imports
 * compiled by the same esbuild into one program. `import.meta.url`/`dirname`/`filename` keep each source
 * file's own location, so files it reads beside itself (package.json, console/dist, built-in
 * connectors) are found as before. tsx's loader is not registered: everything it would compile is compiled.
 */
const sourceFiles: esbuild.Plugin = {
  name: "switchyard-sources",
  setup(build) {
    build.onResolve({ filter: /^tsx\/esm\/api$/ }, () => ({ path: "tsx", namespace: "precompiled" }))
    build.onLoad({ filter: /.*/, namespace: "precompiled" }, () => ({
      contents: "export const register = () => () => undefined",
      loader: "js"
    }))
    build.onResolve(
      { filter: /^[^./]/ },
      (args) => args.kind === "entry-point" || BUNDLED.test(args.path) ? undefined : { path: args.path, external: true }
    )
    build.onLoad({ filter: /\.(ts|js|mjs)$/ }, async (args) => {
      if (args.path.includes(`${Path.sep}node_modules${Path.sep}`)) return undefined
      const text = (await Fs.promises.readFile(args.path, "utf8"))
        .replaceAll("import.meta.dirname", JSON.stringify(Path.dirname(args.path)))
        .replaceAll("import.meta.filename", JSON.stringify(args.path))
        .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href))
      return { contents: text, loader: args.path.endsWith(".ts") ? "ts" : "js", resolveDir: Path.dirname(args.path) }
    })
  }
}

/** A directory for one test run's bundle (globalSetup provides it, and removes it when the run ends). */
export const runBundleDirectory = () =>
  Path.join(CACHE, `run-${process.pid}-${Math.random().toString(36).slice(2, 10)}`)

/**
 * Builds bin/switchyard.js into a directory of its own; returns the path of the program to run with node.
 * A client command starts in about a quarter of the CPU the bin takes through tsx (which compiles and
 * loads each module through its loader thread). With `shared` (the run's directory): built there once, by
 * whichever worker of the run comes first; the others take it (a worker that built too leaves its own).
 */
export const buildCliBundle = async (
  shared?: string
): Promise<{ readonly bin: string; readonly dispose: () => void }> => {
  const binIn = (dir: string) => Path.join(dir, "switchyard.js")
  if (shared !== undefined && Fs.existsSync(binIn(shared))) return { bin: binIn(shared), dispose: () => undefined }
  Fs.mkdirSync(CACHE, { recursive: true })
  // bundles a crashed run left behind
  for (const entry of Fs.readdirSync(CACHE)) {
    const full = Path.join(CACHE, entry)
    try {
      if (Date.now() - Fs.statSync(full).mtimeMs > 3_600_000) Fs.rmSync(full, { recursive: true, force: true })
    } catch {
      // removed meanwhile by another run
    }
  }
  const outdir = Fs.mkdtempSync(Path.join(CACHE, "build-"))
  await esbuild.build({
    entryPoints: [Path.join(ROOT, "bin", "switchyard.js")],
    outdir,
    bundle: true,
    splitting: true, // the node's commands stay a chunk of their own, loaded only when used, as in src/cli.ts
    format: "esm",
    platform: "node",
    target: "node20",
    logLevel: "warning",
    plugins: [sourceFiles],
    // the bundled CommonJS packages call require() for node's modules
    banner: {
      js:
        "import { createRequire as __switchyardRequire } from \"node:module\"; const require = __switchyardRequire(import.meta.url);"
    }
  })
  const own = { bin: binIn(outdir), dispose: () => Fs.rmSync(outdir, { recursive: true, force: true }) }
  if (shared === undefined) return own
  try {
    Fs.renameSync(outdir, shared)
    return { bin: binIn(shared), dispose: () => undefined }
  } catch {
    // another worker's build got there first: the same sources, so its program serves
    own.dispose()
    return { bin: binIn(shared), dispose: () => undefined }
  }
}
