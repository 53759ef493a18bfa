import { importOpenApi } from "./src/connectors/openapi/OpenApiImport.js"
let seed = 1; const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647
const N = 400
const schemas: Record<string, unknown> = {}
for (let i = 0; i < N; i++) {
  const props: Record<string, unknown> = {}
  for (let j = 0; j < 12; j++) props[`p${j}`] = rnd() < 0.4 ? { $ref: `#/components/schemas/S${Math.floor(rnd() * N)}` } : rnd() < 0.2 ? { type: "array", items: { $ref: `#/components/schemas/S${Math.floor(rnd() * N)}` } } : { type: "string" }
  schemas[`S${i}`] = { type: "object", properties: props, nullable: rnd() < 0.3 }
}
const paths: Record<string, unknown> = {}
for (let i = 0; i < 600; i++) paths[`/r${i}/{id}`] = { parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }], post: { operationId: `op${i}`, requestBody: { content: { "application/json": { schema: { $ref: `#/components/schemas/S${i % N}` } } } } } }
const doc = { openapi: "3.0.0", info: { title: "x", version: "1" }, paths, components: { schemas } }
const t = Date.now()
importOpenApi(doc)
console.log(Date.now() - t)
