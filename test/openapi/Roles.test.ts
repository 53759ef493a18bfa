import { HttpApi, OpenApi } from "@effect/platform"
import { Arbitrary, Context, FastCheck, Option, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "../../schema/Api.js"
import { type Role, roleDisplayName } from "../../schema/Identity.js"
import { OperationDocs } from "../../schema/OperationDoc.js"
import type { Permission } from "../../schema/Policy.js"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

/**
 * The permission each operation documents (`operation({ permission })` beside the endpoint, an entry of
 * schema/Policy.ts, rendered as `x-switchyard-role` and the description's **Role:** line) is the one the
 * server enforces: the role just below it is refused with that entry's own "Only <Role> and above may
 * <action>", and the documented role itself is never refused so (for the reads, which change nothing). Bodies are generated from each operation's
 * payload schema, so they pass decoding and reach the role check. Every error answered on the way carries a
 * code of the operation's documented enum.
 */
interface Case {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly role: Role
  readonly permission: Permission
  readonly payload: Option.Option<Schema.Schema<unknown>>
}

const below: Record<Role, Role | undefined> = {
  member: undefined,
  builder: "member",
  admin: "builder",
  super_admin: "admin"
}

const cases: Array<Case> = []
HttpApi.reflect(Api, {
  onGroup() {},
  onEndpoint({ endpoint }) {
    const doc = Option.getOrUndefined(Context.getOption(endpoint.annotations, OperationDocs))
    if (doc === undefined || doc.permission === null) return
    cases.push({
      id: Option.getOrElse(Context.getOption(endpoint.annotations, OpenApi.Identifier), () => endpoint.name),
      method: endpoint.method,
      path: endpoint.path,
      role: doc.permission.role,
      permission: doc.permission,
      payload: Option.map(endpoint.payloadSchema, (schema) => Schema.make<unknown, unknown, never>(schema.ast))
    })
  }
})

/** Each operation's documented error codes, from the document the node serves. */
const document = OpenApi.fromApi(Api) as Record<string, any>
const documentedCodes = (c: Case): Array<string> => {
  const op = document.paths[c.path.replace(/:(\w+)/g, "{$1}")][c.method.toLowerCase()]
  const name = `${op.operationId.charAt(0).toUpperCase()}${op.operationId.slice(1)}Error`
  return document.components.schemas[name].properties.error.properties.code.enum
}

const UUID = "00000000-0000-4000-8000-000000000001"
const pathOf = (path: string) =>
  path.replace(
    /:(\w+)/g,
    (_, name: string) =>
      name === "provider" ? "openai" : name === "operation_id" ? "op" : name === "delivery_id" ? "msg_1" : UUID
  )

/** A body that decodes: generated from the payload schema, then encoded to the wire. */
const bodyOf = (payload: Option.Option<Schema.Schema<unknown>>) => {
  if (Option.isNone(payload)) return undefined
  const schema = payload.value
  const [value] = FastCheck.sample(Arbitrary.make(schema), { numRuns: 1, seed: 42 })
  return Schema.encodeSync(schema)(value)
}

let node: TestNode
const keys = {} as Record<Role, string>
/**
 * Requests whose resource must exist before the role is checked (the server looks it up first), and bodies
 * the generator cannot make (a pattern with a lookahead): made in `beforeAll`.
 */
const fixtures: Record<string, { path?: string; body?: unknown }> = {
  retryWebhookDelivery: {
    path: `/v1/webhooks/${"00000000-0000-4000-8000-000000000001"}/deliveries/msg_${"0".repeat(32)}/retry`
  },
  putSso: {
    body: { issuer: "https://sso.example.com", client_id: "switchyard", allowed_email_domains: ["example.com"] }
  }
}

beforeAll(async () => {
  node = await startTestNode()
  const boot = await node.bootstrap()
  keys.super_admin = boot.api_key
  // a person for each role below Super admin, and their personal key (a person owns what they create)
  for (const role of ["admin", "builder", "member"] as const) {
    const member = await node.fetch("/v1/members", {
      method: "POST",
      apiKey: boot.api_key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: `${role}@example.com`, role })
    })
    expect(member.status).toBe(201)
    const response = await node.fetch("/v1/api-keys", {
      method: "POST",
      apiKey: boot.api_key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: role, kind: "personal", user_id: (await member.json()).user.id })
    })
    expect(response.status).toBe(201)
    keys[role] = (await response.json()).api_key
  }
  const post = async (path: string, body: unknown, apiKey = boot.api_key) => {
    const response = await node.fetch(path, {
      method: "POST",
      apiKey,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    expect(response.status, await response.clone().text()).toBe(201)
    return response.json()
  }
  const connector = await createConnector(node, boot.api_key, petstore("http://127.0.0.1:9"))
  const connection = await createConnection(node, boot.api_key, connector.id, {
    name: "pets",
    credentials: { type: "api_key", value: "k" }
  })
  // a Builder's own draft: they see it, and may not publish it
  const skill = await post(
    "/v1/skills",
    { name: "pets", actions: [{ connection_id: connection.id, operation_id: "getPet" }] },
    keys.builder
  )
  fixtures.publishSkill = { path: `/v1/skills/${skill.id}/publish` }
  const uploaded = await node.fetch("/v1/files?name=roles.txt", {
    method: "POST",
    apiKey: boot.api_key,
    headers: { "content-type": "text/plain" },
    body: "hello"
  })
  expect(uploaded.status).toBe(201)
  fixtures.deleteFile = { path: `/v1/files/${(await uploaded.json()).id}` }
})

afterAll(async () => {
  await node?.stop()
})

const call = async (c: Case, role: Role) => {
  const fixture = fixtures[c.id]
  const body = c.id === "uploadFile" ? "hello" : fixture?.body ?? bodyOf(c.payload)
  const path = fixture?.path ?? pathOf(c.path)
  const response = await node.fetch(`${path}${c.id === "uploadFile" ? "?name=a.txt" : ""}`, {
    method: c.method,
    apiKey: keys[role],
    ...(body === undefined
      ? {}
      : typeof body === "string"
      ? { body, headers: { "content-type": "text/plain" } }
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } })
  })
  const text = await response.text()
  const error = response.status >= 400 ? JSON.parse(text)?.error : undefined
  // whatever the answer, an error's code is one the operation documents
  if (error !== undefined) expect(documentedCodes(c), `${c.id} answered ${error.code}`).toContain(error.code)
  return { status: response.status, message: String(error?.message ?? "") }
}

const refusal = (role: Role) => `Only ${roleDisplayName[role]} and above may`

describe("documented roles", () => {
  it("cover every operation", () => {
    expect(cases.length).toBeGreaterThan(60)
  })

  for (const c of cases.filter((c) => below[c.role] !== undefined)) {
    it(`${c.id}: ${roleDisplayName[c.role]} and above, as documented`, async () => {
      const refused = await call(c, below[c.role]!)
      expect(refused.status, refused.message).toBe(403)
      expect(refused.message).toContain(`${refusal(c.role)} ${c.permission.action};`)
    })
  }

  for (const c of cases.filter((c) => !c.path.endsWith("/events"))) {
    it(`${c.id}: a malformed request and a missing key get codes it documents`, async () => {
      const response = await node.fetch(c.path.replace(/:(\w+)/g, "not-an-id"), {
        method: c.method,
        apiKey: keys.member,
        ...(c.method === "GET" || c.method === "DELETE"
          ? {}
          : { body: "{\"unexpected\": true}", headers: { "content-type": "application/json" } })
      })
      if (response.status >= 400) expect(documentedCodes(c)).toContain((await response.json()).error.code)
      const anonymous = await fetch(`${node.baseUrl}${pathOf(c.path)}`, { method: c.method })
      expect(documentedCodes(c)).toContain((await anonymous.json()).error.code)
    })
  }

  for (const c of cases.filter((c) => c.method === "GET" && !c.path.endsWith("/events"))) {
    it(`${c.id}: ${roleDisplayName[c.role]} is not refused for its role`, async () => {
      const answer = await call(c, c.role)
      expect(answer.message).not.toContain("and above may")
    })
  }
})
