import * as Fs from "node:fs"
import { importOpenApi } from "./src/connectors/openapi/OpenApiImport.js"
const cases: Array<unknown> = [
  Fs.readFileSync("test/connectors/openapi/fixtures/broken-syntax.yaml", "utf8"),
  "{ \"openapi\": \"3.0.0\", \"info\": {",
  "a: b\n  c: d\n",
  "key: [1, 2\n",
  "",
  "just text",
  [],
  null,
  42,
  { info: {} },
  { swaggerVersion: "1.2" },
  { openapi: "1.2" },
  { swagger: "1.2" },
  { openapi: "4.0.0" },
  { openapi: 3.1, info: {}, paths: {} },
  { openapi: "3.0.0", info: {} },
  { swagger: "2.0", info: {} },
  { openapi: "3.1.0" },
  { openapi: "3.1.0", paths: [] },
  { openapi: "3.0.0", paths: "x" },
  { openapi: "3.1.0", info: { title: "Hooks", version: "1" }, webhooks: { a: { post: {} } } },
  "openapi: 3.0\ninfo: {title: x, version: 1.0}\npaths: {}\n",
  "a: &a [1]\nb: *a\n"
]
for (const c of cases) {
  try {
    const r = importOpenApi(c)
    console.log("OK", r.specVersion, r.operations.length, JSON.stringify(r.report.warnings))
  } catch (e: any) {
    console.log(e.name, JSON.stringify(e.pointer), e.message)
  }
}
