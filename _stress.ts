import { validatorFor } from "./src/connectors/openapi/InputValidator.js"
import { importOpenApi } from "./src/connectors/openapi/OpenApiImport.js"
let seed = 1
const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647
const N = 400
const schemas: Record<string, unknown> = {}
for (let i = 0; i < N; i++) {
  const props: Record<string, unknown> = {}
  for (let j = 0; j < 12; j++) {
    props[`p${j}`] = rnd() < 0.4
      ? { $ref: `#/components/schemas/S${Math.floor(rnd() * N)}` }
      : rnd() < 0.2
      ? { type: "array", items: { $ref: `#/components/schemas/S${Math.floor(rnd() * N)}` } }
      : { type: "string" }
  }
  schemas[`S${i}`] = { type: "object", properties: props, nullable: rnd() < 0.3 }
}
const paths: Record<string, unknown> = {}
for (let i = 0; i < 600; i++) {
  paths[`/r${i}/{id}`] = {
    parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
    post: {
      operationId: `op${i}`,
      requestBody: { content: { "application/json": { schema: { $ref: `#/components/schemas/S${i % N}` } } } }
    }
  }
}
const doc = { openapi: "3.0.0", info: { title: "x", version: "1" }, paths, components: { schemas } }
let t = Date.now()
const c = importOpenApi(doc)
console.log("import ms", Date.now() - t, "ops", c.operations.length, "warnings", c.report.warnings.length)
t = Date.now()
const json = JSON.stringify(c.operations[0])
console.log("json bytes", json.length, "ms", Date.now() - t)
t = Date.now()
const depthOf = (v: unknown): number => typeof v !== "object" || v === null ? 0 : 1 + Math.max(0, ...Object.values(v).map(depthOf)); console.log("depth", depthOf(c.operations[0]!.input), "defs", Object.keys(c.operations[0]!.input.$defs as object).length, c.report.warnings.slice(0,3)); try { for (const op of c.operations.slice(0, 50)) validatorFor(op) } catch (e) { console.log(String(e)) }
console.log("compile 50 ms", Date.now() - t)
console.log("max defs", Math.max(...c.operations.map((o) => Object.keys((o.input.$defs as object) ?? {}).length)))
const counts = new Map<string, number>()
for (const w of c.report.warnings) counts.set(w.message.slice(0, 60), (counts.get(w.message.slice(0, 60)) ?? 0) + 1)
console.log([...counts].slice(0, 10))
