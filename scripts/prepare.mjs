// `npm install` runs this (package.json `prepare`): it builds the web console into console/dist, which
// every node serves at /console. An install without dev dependencies (`npm install --omit=dev`, as the
// Dockerfile's runtime stage does) has no Vite, and skips it: the image copies a console built in its
// own stage. Everywhere else a failing build fails the install.
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"

const root = new URL("..", import.meta.url)
let vite
try {
  const manifest = createRequire(import.meta.url).resolve("vite/package.json")
  vite = new URL(JSON.parse(Fs.readFileSync(manifest, "utf8")).bin.vite, `file://${manifest}`).pathname
} catch {
  console.error("prepare: Vite is not installed (dev dependencies omitted): the web console is not built here")
  process.exit(0)
}
if (!Fs.existsSync(new URL("console/index.html", root))) {
  console.error("prepare: no console sources here: the web console is not built")
  process.exit(0)
}
const built = spawnSync(process.execPath, [vite, "build", "--config", "console/vite.config.ts", "--logLevel", "warn"], {
  cwd: root,
  stdio: "inherit"
})
process.exit(built.status ?? 1)
