import { describe, expect, it } from "vitest"
import { importFixture, issuesOf, operation, warningsAt } from "./fixtures.js"

const search = importFixture("params-styles.yaml")
const items = "/paths/~1projects~1{projectId}~1items"

describe("parameters", () => {
  it("merges path-level and operation-level parameters, the operation's winning by name and location", () => {
    const searchItems = operation(search, "get_projects_projectId_items")
    expect(searchItems.parameters.map((p) => `${p.in}:${p.name}:${p.style}:${p.explode}:${p.required}`)).toEqual([
      "path:projectId:simple:false:true",
      "query:limit:form:true:true",
      "header:x-trace:simple:false:true",
      "query:filter:deepObject:true:false",
      "query:fields:spaceDelimited:false:false",
      "query:sort:form:false:false",
      "cookie:session:form:true:false"
    ])
    const limit = searchItems.parameters.find((p) => p.name === "limit")
    expect(limit?.description).toBe("Small page size")
    expect(limit?.schema).toEqual({ type: "integer", maximum: 10 })
  })

  it("leaves the path-level parameters as they are for other operations of the path", () => {
    const createItem = operation(search, "post_projects_projectId_items")
    expect(createItem.parameters.map((p) => `${p.in}:${p.name}:${p.required}`)).toEqual([
      "path:projectId:true",
      "query:limit:false",
      "header:X-Trace:false"
    ])
    expect(createItem.input.required).toEqual(["path_params"])
    expect(issuesOf(createItem, { path_params: { projectId: "P" }, query_params: { limit: 50 } })).toBe("ok")
  })

  it("builds required groups and fields of the input from the merged parameters", () => {
    const searchItems = operation(search, "get_projects_projectId_items")
    expect(searchItems.input.required).toEqual(["path_params", "query_params", "headers"])
    expect(searchItems.input.properties).toMatchObject({
      path_params: { required: ["projectId"], properties: { projectId: { description: "Project key" } } },
      query_params: { required: ["limit"] },
      headers: { required: ["x-trace"], properties: { "x-trace": { type: "string", minLength: 8 } } }
    })
    expect(Object.keys((searchItems.input.properties as any).query_params.properties)).toEqual([
      "limit",
      "filter",
      "fields",
      "sort"
    ])
  })

  it("validates searchItems input", () => {
    const searchItems = operation(search, "get_projects_projectId_items")
    const valid = {
      path_params: { projectId: "P1" },
      query_params: { limit: 5, filter: { state: "open" }, fields: ["title"] },
      headers: { "x-trace": "abcdefgh", "accept-language": "nl" }
    }
    expect(issuesOf(searchItems, valid)).toBe("ok")
    expect(issuesOf(searchItems, { path_params: { projectId: "P1" }, query_params: {}, headers: { "x-extra": 5 } }))
      .toEqual([
        "query_params.limit: is required",
        "headers.x-trace: is required",
        "headers.x-extra: must be string"
      ])
    expect(issuesOf(searchItems, { ...valid, query_params: { limit: 11 } })).toEqual([
      "query_params.limit: must be <= 10"
    ])
    expect(issuesOf(searchItems, { ...valid, limit: 5 })).toEqual([
      "limit: is not allowed; send target arguments in path_params, query_params, body_params or headers"
    ])
  })

  it("imports unsupported styles, warning that they are sent as form (or simple)", () => {
    // deepObject and spaceDelimited queries are sent in their style: nothing to warn about
    expect(warningsAt(search, `${items}/get/parameters/1/style`)).toEqual([])
    expect(warningsAt(search, `${items}/get/parameters/2/style`)).toEqual([])
    expect(warningsAt(search, "/paths/~1colors~1{color}/get/parameters/0/style")).toEqual([
      "unsupported parameter style label for path parameter \"color\"; sent as simple"
    ])
    expect(operation(search, "get_colors_color").parameters[0]?.style).toBe("label")
  })

  it("ignores reserved headers and keeps cookies out of the input", () => {
    const searchItems = operation(search, "get_projects_projectId_items")
    expect(searchItems.parameters.some((p) => p.name === "Authorization")).toBe(false)
    expect(warningsAt(search, `${items}/get/parameters/5`)).toEqual([
      "header parameter \"Authorization\" is ignored (OpenAPI reserves it for content negotiation or security)"
    ])
    expect(JSON.stringify(searchItems.input)).not.toContain("session")
    expect(warningsAt(search, `${items}/get/parameters`)).toEqual([
      "cookie parameter \"session\" is not part of the input; send it in headers.cookie"
    ])
  })

  it("skips an operation with an undefined template parameter and drops a path parameter not in the template", () => {
    expect(search.report.skipped).toEqual([{
      method: "get",
      path: "/projects/{projectId}/items/{itemId}",
      pointer: "/paths/~1projects~1{projectId}~1items~1{itemId}/get",
      reason: "path parameter \"itemId\" in the path template has no definition"
    }])
    const getColor = operation(search, "get_colors_color")
    expect(getColor.parameters.map((p) => p.name)).toEqual(["color"])
    expect(warningsAt(search, "/paths/~1colors~1{color}/get/parameters")).toEqual([
      "path parameter \"tone\" is not in the path template; ignored"
    ])
  })

  it("prefers a form body over text/plain", () => {
    const createItem = operation(search, "post_projects_projectId_items")
    expect(createItem.body?.contentType).toBe("application/x-www-form-urlencoded")
    expect(createItem.body?.required).toBe(false)
    expect(issuesOf(createItem, { path_params: { projectId: "P" }, body_params: { title: "T", priority: 9 } }))
      .toEqual(["body_params.priority: must be <= 5"])
  })

  it("keeps path- and operation-level servers on their operations, and warns about parameters described by content", () => {
    expect(search.servers).toEqual(["https://search.example.org"])
    expect(operation(search, "get_archive").servers).toEqual(["https://archive.example.org"])
    expect(operation(search, "get_colors_color").servers).toEqual(["https://colors.example.org"])
    expect(operation(search, "get_projects_projectId_items").servers).toBeUndefined()
    expect(warningsAt(search, "/paths/~1archive/servers")).toEqual([])
    expect(operation(search, "get_archive").parameters[0]?.schema).toEqual({
      type: "object",
      properties: { text: { type: "string" } }
    })
    expect(warningsAt(search, "/paths/~1archive/get/parameters/0/content")).toEqual([
      "parameter \"q\" is described by content (application/json); sent as form"
    ])
  })
})
