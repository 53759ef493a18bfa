import * as Fs from "node:fs"
import * as Path from "node:path"
import { repoRoot } from "./processes.js"

/**
 * The event functions of migration 0016 as it created them (its statements have no interpolations), made
 * replaceable: run them to put 0016's triggers back in place of 0021's, for a comparison in one run.
 */
export const functionsOf0016 = (): ReadonlyArray<string> =>
  Array.from(
    Fs.readFileSync(Path.join(repoRoot, "src/db/migrations/0016_events.ts"), "utf8").matchAll(/yield\* sql`([^`]*)`/g),
    (m) => m[1]!.trim()
  ).filter((s) => s.startsWith("CREATE FUNCTION")).map((s) =>
    s.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
  )
