import { HttpApi, OpenApi } from "@effect/platform"
import { Context, Option } from "effect"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { Api } from "../../schema/Api.js"
import { ErrorCodes } from "../../schema/Errors.js"
import { commonCodes } from "../../schema/OpenApiDocument.js"
import { type OperationDoc, OperationDocs } from "../../schema/OperationDoc.js"

/**
 * What code generators need of the committed document (openapi-typescript, openapi-python-client): stable
 * camelCase operationIds, every operation summarized, tagged, with its role and its error envelope, and
 * every schema named once, with no internal names.
 */
const document = JSON.parse(readFileSync(new URL("../../openapi.json", import.meta.url), "utf8"))
const operations = Object.entries<Record<string, any>>(document.paths).flatMap(([path, methods]) =>
  Object.entries<Record<string, any>>(methods).map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, op }))
)

const walk = (node: unknown, visit: (record: Record<string, unknown>) => void): void => {
  if (Array.isArray(node)) return node.forEach((item) => walk(item, visit))
  if (typeof node !== "object" || node === null) return
  visit(node as Record<string, unknown>)
  for (const value of Object.values(node)) walk(value, visit)
}

describe("openapi.json for code generators", () => {
  it("has unique camelCase operationIds, no dots (webhooks included)", () => {
    const ids = [
      ...operations.map(({ op }) => op.operationId),
      ...Object.values<Record<string, any>>(document.webhooks).map((item) => item.post.operationId)
    ]
    expect(ids.filter((id) => typeof id !== "string" || !/^[a-z][A-Za-z0-9]*$/.test(id))).toEqual([])
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("gives every operation a summary, a tag and its role", () => {
    const lacking = operations.filter(({ op }) =>
      typeof op.summary !== "string" || op.tags?.length !== 1 || typeof op["x-switchyard-role"] !== "string"
    )
    expect(lacking.map(({ where }) => where)).toEqual([])
  })

  it("documents every error as the envelope with a code enum from the catalogue, never HttpApiDecodeError", () => {
    const catalogue = new Set(ErrorCodes.map((e) => e.code))
    for (const { where, op } of operations) {
      for (const [status, response] of Object.entries<Record<string, any>>(op.responses)) {
        expect(status, `${where}: a code outside the catalogue`).not.toBe("default")
        if (Number(status) < 400) continue
        const ref: string = response.content["application/json"].schema.$ref
        const schema = document.components.schemas[ref.split("/").pop()!]
        const codes: Array<string> = schema.properties.error.properties.code.enum
        expect(codes.length, where).toBeGreaterThan(0)
        expect(codes.filter((c) => !catalogue.has(c)), where).toEqual([])
      }
    }
    expect(JSON.stringify(document)).not.toContain("HttpApiDecodeError")
  })

  it("takes each operation's codes from the `errors` list every operation declares (issue 23)", () => {
    // without its list an operation gets the common codes only, never every code of its statuses
    const docs = new Map<string, OperationDoc | undefined>()
    HttpApi.reflect(Api, {
      onGroup() {},
      onEndpoint({ endpoint }) {
        const id = Option.getOrElse(Context.getOption(endpoint.annotations, OpenApi.Identifier), () => endpoint.name)
        docs.set(id, Option.getOrUndefined(Context.getOption(endpoint.annotations, OperationDocs)))
      }
    })
    expect([...docs].filter(([, doc]) => !Array.isArray(doc?.errors)).map(([id]) => id)).toEqual([])
    for (const { where, op } of operations) {
      const doc = docs.get(op.operationId)
      const name = `${op.operationId.charAt(0).toUpperCase()}${op.operationId.slice(1)}Error`
      const documented: Array<string> = document.components.schemas[name].properties.error.properties.code.enum
      expect(documented, where).toEqual([...new Set([...commonCodes(op, doc), ...(doc?.errors ?? [])])].sort())
    }
    expect(document.components.schemas.HealthzError.properties.error.properties.code.enum).not.toContain(
      "invalid_cron"
    )
  })

  it("names every component schema once, titles it by its name, and leaks no internal title or $id", () => {
    const schemas = document.components.schemas as Record<string, Record<string, unknown>>
    expect(Object.entries(schemas).filter(([name, s]) => s.title !== name).map(([name]) => name)).toEqual([])
    // Effect's own refinements, under Effect's names and words, are written in place
    expect(Object.keys(schemas).filter((name) => ["Int", "NonNegative", "Trim", "UUID", "Date"].includes(name)))
      .toEqual([])
    expect(JSON.stringify(document)).not.toMatch(/"description":"an? (string|number|integer|array) /)
    const leaks: Array<string> = []
    walk({ paths: document.paths, webhooks: document.webhooks, schemas }, (record) => {
      if (typeof record.$id === "string") leaks.push(`$id ${record.$id}`)
      if (typeof record.title === "string" && !(record.title in schemas)) leaks.push(`title ${record.title}`)
    })
    expect(leaks).toEqual([])
  })

  it("names every request body's schema", () => {
    const inline = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
      Object.entries(ops).flatMap(([method, op]) =>
        Object.entries<any>(op?.requestBody?.content ?? {}).filter(([, c]) => c.schema?.type === "object").map((
          [type]
        ) => `${method} ${path} ${type}`)
      )
    )
    expect(inline).toEqual([])
    expect(document.paths["/v1/files"].post.requestBody.content["multipart/form-data"].schema.$ref).toBe(
      "#/components/schemas/UploadFileForm"
    )
  })

  it("types query integers and flags as such", () => {
    const parameter = (path: string, name: string) =>
      document.paths[path].get?.parameters?.find((p: any) => p.name === name) ??
        document.paths[path].post?.parameters?.find((p: any) => p.name === name)
    expect(parameter("/v1/tasks", "limit").schema.type).toBe("integer")
    expect(parameter("/v1/tasks/{task_id}", "wait").schema.type).toBe("number")
    expect(parameter("/v1/agents/{agent_id}/invoke", "asynchronous").schema.type).toBe("boolean")
    // every operation's `limit`, not only the ones named above
    const limits = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
      Object.entries(ops).flatMap(([method, op]) =>
        (op?.parameters ?? []).filter((p: any) => p.name === "limit").map((p: any) =>
          `${method} ${path} ${p.schema?.type ?? p.schema?.allOf?.[0]?.type}`
        )
      )
    )
    expect(limits.length).toBeGreaterThan(5)
    expect(limits.filter((l) => !l.endsWith(" integer"))).toEqual([])
  })

  it("carries the package's version and a server", async () => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
    expect(document.info.version).toBe(pkg.version)
    expect(document.servers.length).toBeGreaterThan(0)
  })
})
