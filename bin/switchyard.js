#!/usr/bin/env node
// Runs the TypeScript sources in this process (not a tsx child), so signals reach the node itself.
import { register } from "tsx/esm/api"

register()
await import("../src/cli.ts")
