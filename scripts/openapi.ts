/**
 * Writes the OpenAPI document the node serves at /openapi.json to `openapi.json` (committed, so changes are
 * visible in review) and the TypeScript types of the plain-fetch client to `src/client/openapi.d.ts`.
 * The one command to refresh both after changing anything in schema/: `npm run openapi`
 * (test/openapi/Committed.test.ts fails until it is run).
 */
import { writeFileSync } from "node:fs"
import { openApiDocument, openApiTypes } from "./openapi-document.js"

const document = openApiDocument()
writeFileSync(new URL("../openapi.json", import.meta.url), `${JSON.stringify(document, null, 2)}\n`)
writeFileSync(new URL("../src/client/openapi.d.ts", import.meta.url), await openApiTypes(document))
console.log(`wrote openapi.json (${Object.keys(document.paths).length} paths) and src/client/openapi.d.ts`)
