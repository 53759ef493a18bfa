import { describe, expect, it } from "vitest"
import { operationExamples } from "../../schema/OperationExamples.js"
import { openApiDocument } from "../../scripts/openapi-document.js"

/**
 * Every operation that takes or answers JSON shows an example of it (schema/OperationExamples.ts), and every
 * example belongs to an operation: `documentApi` passes over an id it does not know, so a renamed operation
 * would lose its example without a word. Whether each example fits its schema is the lint's
 * (test/openapi/Lint.test.ts).
 */
const document = openApiDocument()
const operations = Object.values<Record<string, any>>(document.paths).flatMap((methods) => Object.values(methods))

const json = (body: Record<string, any> | undefined) => body?.content?.["application/json"]
const successes = (op: Record<string, any>) =>
  Object.entries<Record<string, any>>(op.responses).filter(([status]) => /^2\d\d$/.test(status))

describe("the OpenAPI document's examples", () => {
  it("show every JSON request body", () => {
    const lacking = operations.filter((op) =>
      json(op.requestBody) !== undefined && json(op.requestBody).example === undefined
    )
    expect(lacking.map((op) => op.operationId)).toEqual([])
  })

  it("show a JSON response of every operation that answers JSON", () => {
    const lacking = operations.filter((op) => {
      const answers = successes(op).filter(([, response]) => json(response) !== undefined)
      return answers.length > 0 && answers.every(([, response]) => json(response).example === undefined)
    })
    expect(lacking.map((op) => op.operationId)).toEqual([])
  })

  it("each belong to an operation, with a request body or a JSON response of the example's status", () => {
    const byId = new Map(operations.map((op) => [op.operationId as string, op]))
    const stray = Object.entries(operationExamples).filter(([id, example]) => {
      const op = byId.get(id)
      if (op === undefined) return true
      if (example.request !== undefined && json(op.requestBody) === undefined) return true
      return example.response !== undefined && json(op.responses[example.response.status]) === undefined
    })
    expect(stray.map(([id]) => id)).toEqual([])
  })
})
