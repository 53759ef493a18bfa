import { importOpenApi } from "./src/connectors/openapi/OpenApiImport.js"
const connector = importOpenApi({
      openapi: "3.0.0",
      info: { title: "Loops", version: "1" },
      paths: { "/a": { post: { requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/A" } } } } } } },
      components: {
        schemas: {
          A: { allOf: [{ $ref: "#/components/schemas/B" }, { type: "object", properties: { a: { type: "string" } } }] },
          B: { anyOf: [{ $ref: "#/components/schemas/A" }, { type: "object" }], properties: { kids: { type: "array", items: { $ref: "#/components/schemas/A" } } } }
        }
      }
    })
console.log(JSON.stringify(connector.operations[0]!.input), connector.report.warnings)
