// The sandbox worker's entry: worker threads do not inherit the tsx loader the node registers at start-up
// (bin/switchyard.js), so the worker registers it before loading its TypeScript.
import { register } from "tsx/esm/api"

register()
process.setSourceMapsEnabled(false) // stack traces of the host side are not needed; mapping them costs
await import("./SandboxWorker.ts")
