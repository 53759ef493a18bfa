import * as Fs from "node:fs"
import { importOpenApi } from "./src/connectors/openapi/OpenApiImport.js"
const name = process.argv[2]!
const c = importOpenApi(Fs.readFileSync(`test/connectors/openapi/fixtures/${name}`, "utf8"))
const mode = process.argv[3] ?? "summary"
if (mode === "full") console.log(JSON.stringify(c, null, 1))
else {
  console.log(JSON.stringify(
    {
      ...c,
      operations: c.operations.map((o) =>
        `${o.id} ${o.operationId} | ${o.pretty_name} | ${o.pretty_description} | params=${
          o.parameters.map((p) => `${p.in}:${p.name}:${p.style}:${p.explode}:${p.required}`).join(",")
        } | body=${o.body?.contentType}:${o.body?.required} | sec=${JSON.stringify(o.security)} | req=${
          JSON.stringify(o.input.required)
        }`
      )
    },
    null,
    1
  ))
}
