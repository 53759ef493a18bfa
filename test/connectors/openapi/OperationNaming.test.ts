import { describe, expect, it } from "vitest"
import { generatedOperationId, humanize, operationSlug } from "../../../src/connectors/openapi/Naming.js"
import { importFixture, operation, warningsAt } from "./fixtures.js"

const naming = importFixture("operation-ids.yaml")

describe("operation ids and names", () => {
  it("derives ids from method and path, and fills or de-duplicates operationIds", () => {
    expect(naming.operations.map((op) => [op.id, op.operationId])).toEqual([
      ["get_users", "getUsers_2"],
      ["post_users", "createUser"],
      ["get_users_userId", "getUsersByUserId"],
      ["put_users_userId", "createUser_2"],
      ["delete_users_userId", "createUser_3"],
      ["get_users_userId_avatar", "getUsers"],
      ["get_user-groups_group_id_members", "getUserGroupsByGroupIdMembers"],
      ["get_reports_csv", "exportReports"],
      ["get_reports_csv_2", "exportReportsAgain"],
      ["get_root", "get_users"],
      ["get_health", "health"]
    ])
    for (const op of naming.operations) expect(op.id).toMatch(/^[A-Za-z0-9_-]+$/)
  })

  it("records why operationIds were generated or renamed", () => {
    expect(warningsAt(naming, "/paths/~1users/get")).toEqual([
      "operationId missing; generated \"getUsers_2\""
    ])
    expect(warningsAt(naming, "/paths/~1users~1{userId}/get")).toEqual([
      "operationId missing; generated \"getUsersByUserId\""
    ])
    expect(warningsAt(naming, "/paths/~1users~1{userId}/put/operationId")).toEqual([
      "duplicate operationId \"createUser\" (already used by POST /users); renamed to \"createUser_2\""
    ])
    expect(warningsAt(naming, "/paths/~1users~1{userId}/delete/operationId")).toEqual([
      "duplicate operationId \"createUser\" (already used by POST /users); renamed to \"createUser_3\""
    ])
    expect(warningsAt(naming, "/paths/~1reports_csv/get")).toEqual([
      "operation id \"get_reports_csv\" is already used by GET /reports.csv; this one is \"get_reports_csv_2\""
    ])
    expect(warningsAt(naming, "/paths/~1/get/operationId")).toEqual([
      "operationId \"get_users\" equals the id of GET /users; lookups by that name are ambiguous"
    ])
  })

  it("skips what cannot be imported, saying why; a path whose id is taken gets a suffixed one", () => {
    expect(naming.report.imported).toBe(11)
    expect(naming.report.skipped).toEqual([
      { method: "*", path: "/broken", pointer: "/paths/~1broken", reason: "path item is not an object" },
      {
        method: "get",
        path: "/broken-operation",
        pointer: "/paths/~1broken-operation/get",
        reason: "operation is not an object"
      }
    ])
  })

  it("reads only the HTTP methods of a path item, lower-casing them", () => {
    const health = operation(naming, "get_health")
    expect(health.method).toBe("get")
    expect(warningsAt(naming, "/paths/~1health/GET")).toEqual(["method \"GET\" is not lower-case; imported as get"])
    expect(naming.operations.filter((op) => op.path === "/health")).toHaveLength(1)
    expect(naming.operations.some((op) => op.path.startsWith("x-"))).toBe(false)
  })

  it("names operations from the summary, else from the operationId", () => {
    expect(operation(naming, "get_users_userId").pretty_name).toBe("Fetch a user")
    expect(operation(naming, "get_users_userId").pretty_description).toBe("Fetch a user")
    expect(operation(naming, "get_user-groups_group_id_members").pretty_name).toBe(
      "Get user groups by group id members"
    )
    expect(operation(naming, "get_reports_csv").pretty_description).toBe("GET /reports.csv")
  })

  it("humanizes camelCase, snake_case and acronyms", () => {
    expect(humanize("getPetById")).toBe("Get pet by id")
    expect(humanize("listPets")).toBe("List pets")
    expect(humanize("get_pet_by_id")).toBe("Get pet by id")
    expect(humanize("fetchHTTPStatus")).toBe("Fetch http status")
    expect(humanize("v2-list-items")).toBe("V2 list items")
  })

  it("generates camelCase operationIds and URL-safe ids", () => {
    expect(generatedOperationId("get", "/pets/{petId}")).toBe("getPetsByPetId")
    expect(generatedOperationId("post", "/user-accounts/{account_id}/api.keys")).toBe(
      "postUserAccountsByAccountIdApiKeys"
    )
    expect(generatedOperationId("get", "/")).toBe("getRoot")
    expect(operationSlug("get", "/pets/{petId}")).toBe("get_pets_petId")
    expect(operationSlug("delete", "/v1/files/{path}/meta.json")).toBe("delete_v1_files_path_meta_json")
  })
})
