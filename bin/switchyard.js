#!/usr/bin/env node
// Runs the TypeScript sources in this process (not a tsx child), so signals reach the node itself.
import { register } from "tsx/esm/api"

register()
// tsx turns source maps on; with them every error stack the runtime builds is mapped back, which cost
// the task hot path ~40% of its CPU. SWITCHYARD_SOURCE_MAPS=true keeps them for debugging.
if (process.env["SWITCHYARD_SOURCE_MAPS"] !== "true") process.setSourceMapsEnabled(false)
await import("../src/cli.ts")
