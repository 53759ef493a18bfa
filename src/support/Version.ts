import * as Fs from "node:fs"

/** The package's version, as the node names itself to others (MCP, OTLP exports, calls to target APIs). */
export const VERSION: string =
  JSON.parse(Fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version
