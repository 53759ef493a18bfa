// The extraction worker's entry: worker threads do not inherit the tsx loader the node registers at start-up
// (bin/switchyard.js), so the worker registers it before loading its TypeScript.
import { register } from "tsx/esm/api"

register()
process.setSourceMapsEnabled(false)
await import("./ExtractionWorker.ts")
