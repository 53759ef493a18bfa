import { describe, expect, it } from "vitest"
import { importFixture, operation, warningsAt } from "./fixtures.js"

const workspace = importFixture("security-multi.yaml")

describe("security schemes and requirements", () => {
  it("imports apiKey, http bearer, oauth2 and openIdConnect schemes", () => {
    expect(workspace.securitySchemes).toEqual({
      ApiKeyHeader: {
        type: "apiKey",
        in: "header",
        name: "X-Workspace-Key",
        description: "Workspace key from the admin console"
      },
      Bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
      OAuth: {
        type: "oauth2",
        flows: {
          authorizationCode: {
            authorizationUrl: "https://auth.workspace.test/authorize",
            tokenUrl: "https://auth.workspace.test/token",
            refreshUrl: "https://auth.workspace.test/refresh",
            scopes: {
              "docs:read": "Read documents",
              "docs:write": "Write documents",
              admin: "Administer the workspace"
            }
          },
          clientCredentials: {
            tokenUrl: "https://auth.workspace.test/token",
            scopes: { "docs:read": "Read documents" }
          }
        }
      },
      Oidc: {
        type: "openIdConnect",
        openIdConnectUrl: "https://auth.workspace.test/.well-known/openid-configuration"
      },
      Session: { type: "apiKey", in: "cookie", name: "session" },
      SharedKey: {
        type: "apiKey",
        in: "header",
        name: "X-Workspace-Key",
        description: "Workspace key from the admin console"
      }
    })
  })

  it("warns about unsupported flows and schemes", () => {
    expect(warningsAt(workspace, "/components/securitySchemes/OAuth/flows/password")).toEqual([
      "oauth2 password flow is not supported; ignored"
    ])
    expect(warningsAt(workspace, "/components/securitySchemes/Digest")).toEqual([
      "unsupported http authentication scheme \"digest\"; scheme ignored"
    ])
  })

  it("keeps document-level alternatives and per-operation overrides", () => {
    expect(workspace.security).toEqual([{ ApiKeyHeader: [] }, { Bearer: [] }])
    expect(operation(workspace, "get_documents").security).toEqual([{ OAuth: ["docs:read"] }, { ApiKeyHeader: [] }])
    // both schemes of one requirement object apply together
    expect(operation(workspace, "post_documents").security).toEqual([
      { OAuth: ["docs:read", "docs:write"] },
      { Bearer: [], ApiKeyHeader: [] }
    ])
    // a connection holds one scheme's credentials: the import says the pair cannot both be sent
    expect(warningsAt(workspace, "/paths/~1documents/post/security/1")).toEqual([
      "security requirement needs \"Bearer\" and \"ApiKeyHeader\" together; a connection supplies one of them, " +
      "so calls carry only that scheme's credentials"
    ])
    expect(operation(workspace, "get_documents_id").security).toBeNull()
    expect(operation(workspace, "get_status").security).toEqual([])
  })

  it("keeps a requirement naming an unsupported scheme, with a warning", () => {
    expect(operation(workspace, "delete_documents_id").security).toEqual([{ Digest: [] }])
    expect(warningsAt(workspace, "/paths/~1documents~1{id}/delete/security/0/Digest")).toEqual([
      "security requirement names undefined or unsupported scheme \"Digest\""
    ])
  })
})
