#!/usr/bin/env node
// Runs the TypeScript sources in this process (not a tsx child), so signals reach the node itself.
import { register } from "tsx/esm/api"

// Read before the app loads, so checked here as the configuration checks its settings: true or false, empty
// or unset is the default (false), anything else stops every command with the configuration's one line.
const sourceMaps = process.env["SWITCHYARD_SOURCE_MAPS"] ?? ""
if (sourceMaps.trim() !== "" && sourceMaps !== "true" && sourceMaps !== "false") {
  process.stderr.write(
    "switchyard: invalid configuration: (Invalid data at SWITCHYARD_SOURCE_MAPS: " +
      `"must be true or false (not ${JSON.stringify(sourceMaps)})")\n`
  )
  process.exit(1)
}

register()
// tsx turns source maps on; with them every error stack the runtime builds is mapped back, which cost
// the task hot path ~40% of its CPU. SWITCHYARD_SOURCE_MAPS=true keeps them for debugging.
if (sourceMaps !== "true") process.setSourceMapsEnabled(false)
await import("../src/cli.ts")
