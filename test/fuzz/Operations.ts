import { HttpApi } from "@effect/platform"
import { Option, Schema, type SchemaAST } from "effect"
import { Api } from "../../schema/Api.js"

/** One operation of the served OpenAPI document, with the contract's own schemas where `schema/` has them. */
export interface Operation {
  /** `GET /v1/agents/{agent_id}`: how failures are grouped and reported. */
  readonly key: string
  readonly method: string
  readonly template: string
  readonly pathParams: ReadonlyArray<string>
  readonly queryParams: ReadonlyArray<string>
  readonly headerParams: ReadonlyArray<string>
  /** Every status the document lists for the operation. */
  readonly statuses: ReadonlySet<number>
  /** Content types the document lists per success status (empty: no body). */
  readonly successTypes: ReadonlyMap<number, ReadonlyArray<string>>
  readonly takesBody: boolean
  /** Changes or removes what its last path parameter names: it gets the `spend` ids. */
  readonly destructive: boolean
  readonly payload: Schema.Schema<any, any> | undefined
  readonly pathSchema: Schema.Schema<any, any> | undefined
  readonly urlParams: Schema.Schema<any, any> | undefined
  /** The contract's success schema per status, to decode 2xx bodies with. */
  readonly successes: ReadonlyMap<number, Schema.Schema<any, any> | undefined>
}

interface Contract {
  readonly payload: Schema.Schema<any, any> | undefined
  readonly pathSchema: Schema.Schema<any, any> | undefined
  readonly urlParams: Schema.Schema<any, any> | undefined
  readonly successes: ReadonlyMap<number, Schema.Schema<any, any> | undefined>
}

/** The contract in `schema/Api.ts`, by `METHOD /path/{param}`. */
const contracts = (): ReadonlyMap<string, Contract> => {
  const byKey = new Map<string, Contract>()
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, successes }) => {
      const template = endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")
      const success = new Map<number, Schema.Schema<any, any> | undefined>()
      for (const [status, { ast }] of successes) {
        success.set(
          status,
          Option.match(ast, { onNone: () => undefined, onSome: (a: SchemaAST.AST) => Schema.make(a) })
        )
      }
      byKey.set(`${endpoint.method} ${template}`, {
        payload: Option.getOrUndefined(endpoint.payloadSchema) as Schema.Schema<any, any> | undefined,
        pathSchema: Option.getOrUndefined(endpoint.pathSchema) as Schema.Schema<any, any> | undefined,
        urlParams: Option.getOrUndefined(endpoint.urlParamsSchema) as Schema.Schema<any, any> | undefined,
        successes: success
      })
    }
  })
  return byKey
}

/** `POST …/connections/{connection_id}/{operation_id}`: answers with the target's status and body. */
export const isInvoke = (op: Operation) => op.method === "POST" && op.template.endsWith("/{operation_id}")

const DESTRUCTIVE_POST = /\/(archive|approve|reject|cancel)$/

/** Every operation of an OpenAPI document (as `GET /openapi.json` serves it). */
export const operationsOf = (document: any): ReadonlyArray<Operation> => {
  const known = contracts()
  const operations: Array<Operation> = []
  for (const [template, item] of Object.entries<any>(document.paths ?? {})) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (typeof op !== "object" || op === null || op.responses === undefined) continue
      const upper = method.toUpperCase()
      const parameters: Array<any> = [...(item.parameters ?? []), ...(op.parameters ?? [])]
      const named = (where: string) => parameters.filter((p) => p.in === where).map((p) => p.name as string)
      const successTypes = new Map<number, ReadonlyArray<string>>()
      for (const [status, response] of Object.entries<any>(op.responses)) {
        if (Number(status) < 300) successTypes.set(Number(status), Object.keys(response.content ?? {}))
      }
      const contract = known.get(`${upper} ${template}`)
      operations.push({
        key: `${upper} ${template}`,
        method: upper,
        template,
        pathParams: named("path"),
        queryParams: named("query"),
        headerParams: named("header"),
        statuses: new Set(Object.keys(op.responses).map(Number)),
        successTypes,
        takesBody: op.requestBody !== undefined,
        destructive: ["PUT", "PATCH", "DELETE"].includes(upper) ||
          (upper === "POST" && DESTRUCTIVE_POST.test(template)),
        payload: contract?.payload,
        pathSchema: contract?.pathSchema,
        urlParams: contract?.urlParams,
        successes: contract?.successes ?? new Map()
      })
    }
  }
  return operations
}
