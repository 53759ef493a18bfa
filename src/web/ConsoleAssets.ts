import { HttpServerResponse } from "@effect/platform"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import { acceptsGzip } from "../http/StaticCompression.js"

/** Where `npm run build:console` (run by `prepare`) writes the console. */
export const CONSOLE_DIST = Path.resolve(import.meta.dirname, "../../console/dist")

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8"
}

/**
 * The page's policy: its own scripts and styles only (no inline code, nothing from elsewhere), calls to this
 * origin only, never framed. The console needs nothing else.
 */
export const CONSOLE_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; " +
  "frame-ancestors 'none'"

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin"
}

interface Asset {
  readonly body: Uint8Array
  readonly gzip: Uint8Array | undefined
  readonly type: string
  readonly immutable: boolean
}

/** The built console, read once when the node starts (a few hundred KB); gzipped once where that helps. */
export const loadConsoleAssets = (dir = CONSOLE_DIST): ReadonlyMap<string, Asset> | undefined => {
  if (!Fs.existsSync(Path.join(dir, "index.html"))) return undefined
  const assets = new Map<string, Asset>()
  const walk = (sub: string) => {
    for (const entry of Fs.readdirSync(Path.join(dir, sub), { withFileTypes: true })) {
      const rel = sub === "" ? entry.name : `${sub}/${entry.name}`
      if (entry.isDirectory()) walk(rel)
      else {
        const body = Fs.readFileSync(Path.join(dir, rel))
        const type = TYPES[Path.extname(rel)] ?? "application/octet-stream"
        const compressible = /^(text\/|application\/json|image\/svg)/.test(type) && body.length > 1024
        // Vite names what it emits under assets/ by content hash: such a file never changes
        assets.set(rel, {
          body,
          gzip: compressible ? Zlib.gzipSync(body, { level: 9 }) : undefined,
          type,
          immutable: rel.startsWith("assets/")
        })
      }
    }
  }
  walk("")
  return assets
}

export const assetResponse = (asset: Asset, acceptEncoding: string | undefined) => {
  const gzip = asset.gzip !== undefined && acceptsGzip(acceptEncoding)
  return HttpServerResponse.uint8Array(gzip ? asset.gzip! : asset.body, {
    contentType: asset.type,
    headers: {
      ...SECURITY_HEADERS,
      "cache-control": asset.immutable ? "public, max-age=31536000, immutable" : "no-cache",
      vary: "accept-encoding",
      ...(gzip ? { "content-encoding": "gzip" } : {}),
      ...(asset.type.startsWith("text/html") ? { "content-security-policy": CONSOLE_CSP } : {})
    }
  })
}
