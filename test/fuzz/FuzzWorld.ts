import { petstore } from "../connectors/support.js"
import { obtainTokens } from "../mcp/support.js"
import type { TestNode } from "../support/TestNode.js"
import { BASE_PATH } from "./Upstream.js"

/** Where the fuzzed node runs and how to do what has no API: create an organization, set a password. */
export interface FuzzHost {
  readonly baseUrl: string
  readonly bootstrap: (organization: string) => Promise<{ organization_id: string; user_id: string; api_key: string }>
  readonly setPassword: (email: string, password: string) => Promise<void>
}

export const ROLES = ["super_admin", "admin", "builder", "member"] as const
export type Role = (typeof ROLES)[number]

export interface Person {
  readonly userId: string
  readonly email: string
  readonly key: string
  readonly keyId: string
}

/**
 * Ids a request may name, by path parameter name. `use`: real objects the fuzz must not destroy (the
 * callers, the objects cross-organization checks need). `spend`: objects made to be changed or deleted.
 */
export type IdPools = Record<string, { readonly use: ReadonlyArray<string>; readonly spend: ReadonlyArray<string> }>

export interface Organization {
  readonly label: "A" | "B"
  readonly organizationId: string
  readonly people: Readonly<Record<Role, Person>>
  readonly ids: IdPools
  /** The agent whose run waits for an approval: a synchronous MCP invoke of it waits its full 50 s. */
  readonly pausingAgent: string
}

export interface FuzzWorld {
  readonly orgs: readonly [Organization, Organization]
  /** Org A's people signed in to MCP, one bearer token per role. */
  readonly mcpTokens: Readonly<Record<Role, string>>
  /** The connector's operations by id, with what an invoke of each takes. */
  readonly operations: Readonly<Record<string, ConnectorOperation>>
}

export interface ConnectorOperation {
  readonly path: ReadonlyArray<string>
  readonly query: ReadonlyArray<string>
  readonly body: boolean
}

export const PASSWORD = "fuzz password 1234 correct"
const OPERATIONS: Record<string, ConnectorOperation> = {
  listPets: { path: [], query: ["limit"], body: false },
  createPet: { path: [], query: [], body: true },
  getPet: { path: ["petId"], query: [], body: false },
  deletePet: { path: ["petId"], query: [], body: false },
  getFile: { path: ["name"], query: [], body: false },
  slow: { path: [], query: [], body: false },
  getResource: { path: ["resource"], query: [], body: false },
  getItem: { path: ["group", "item"], query: [], body: false }
}

/**
 * The pet store, plus operations whose path parameters sit right under the base path (`/{resource}`,
 * `/{group}/{item}`): a dot segment there would climb out of it.
 */
const connectorSpec = (serverUrl: string) => {
  const spec = petstore(serverUrl)
  const param = (name: string) => ({ name, in: "path", required: true, schema: { type: "string" } })
  const get = (operationId: string, names: ReadonlyArray<string>) => ({
    get: { operationId, parameters: names.map(param), responses: { "200": { description: "ok" } } }
  })
  return {
    ...spec,
    paths: {
      ...spec.paths,
      "/{resource}": get("getResource", ["resource"]),
      "/{group}/{item}": get("getItem", ["group", "item"])
    }
  }
}

const request = async (host: FuzzHost, key: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(host.baseUrl + path, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`fuzz world: ${method} ${path}: ${response.status} ${text}`)
  return text === "" ? undefined : JSON.parse(text)
}

let serial = 0
const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++serial}`

const addPerson = async (host: FuzzHost, admin: string, role: Role): Promise<Person> => {
  const email = `${unique(role)}@fuzz.example.com`
  const added = await request(host, admin, "POST", "/v1/members", { email, role })
  const key = await request(host, admin, "POST", "/v1/api-keys", { name: `${role} key`, user_id: added.user.id })
  return { userId: added.user.id, email, key: key.api_key, keyId: key.id }
}

const scripted = (name: string, script: ReadonlyArray<unknown> = [{ text: "hello" }]) => ({
  name,
  model: { provider: "scripted", script }
})

const waitFor = async (host: FuzzHost, key: string, taskId: string, status: string) => {
  for (let i = 0; i < 400; i++) {
    const task = await request(host, key, "GET", `/v1/tasks/${taskId}`)
    if (task.status === status) return task
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`fuzz world: task ${taskId} never reached ${status}`)
}

/** The MCP resource as clients read it from the protected-resource metadata. */
const mcpResource = async (host: FuzzHost) =>
  (await (await fetch(`${host.baseUrl}/.well-known/oauth-protected-resource`)).json()).resource as string

const signIn = async (host: FuzzHost, person: Person) => {
  await host.setPassword(person.email, PASSWORD)
  const node = { baseUrl: host.baseUrl } as TestNode
  return (await obtainTokens(node, person.email, { password: PASSWORD, resource: await mcpResource(host) })).tokens
}

/**
 * One organization with a person of every role and real objects of every kind a path can name: an agent on
 * the keyless `scripted` model, a connector imported from the target server (its API under BASE_PATH) and a
 * connection to it, a group,
 * a skill, a finished task, a task waiting for an approval and that approval, an MCP authorization; and a
 * second of each (the `spend` pool) for the requests that change or delete.
 */
const makeOrganization = async (host: FuzzHost, label: "A" | "B", targetUrl: string): Promise<Organization> => {
  const created = await host.bootstrap(`Fuzz ${label} ${unique("org")}`)
  const admin = created.api_key
  const me = await request(host, admin, "GET", "/v1/me")
  const superAdmin: Person = { userId: created.user_id, email: me.user.email, key: admin, keyId: me.key?.id ?? "" }
  const people = {
    super_admin: superAdmin,
    admin: await addPerson(host, admin, "admin"),
    builder: await addPerson(host, admin, "builder"),
    member: await addPerson(host, admin, "member")
  }
  const victim = await addPerson(host, admin, "member")
  const victimKey = await request(host, admin, "POST", "/v1/api-keys", { name: "victim", kind: "organization" })

  const agent = await request(host, admin, "POST", "/v1/agents", scripted("Fuzz agent"))
  const victimAgent = await request(host, admin, "POST", "/v1/agents", scripted("Victim agent"))
  const connector = await request(host, admin, "POST", "/v1/tools/connectors", {
    spec: connectorSpec(targetUrl + BASE_PATH),
    name: `Pets ${label}`
  })
  const victimConnector = await request(host, admin, "POST", "/v1/tools/connectors", {
    spec: connectorSpec(targetUrl + BASE_PATH),
    name: `Victim pets ${label}`
  })
  const connectionsPath = `/v1/tools/connectors/${connector.id}/connections`
  const credentials = { type: "api_key", value: "k" }
  const connection = await request(host, admin, "POST", connectionsPath, { name: "pets", credentials })
  const victimConnection = await request(host, admin, "POST", connectionsPath, { name: "victim", credentials })
  const group = await request(host, admin, "POST", "/v1/groups", { name: unique("Team") })
  const victimGroup = await request(host, admin, "POST", "/v1/groups", { name: unique("Victims") })
  await request(host, admin, "POST", `/v1/groups/${group.id}/members`, { user_id: victim.userId })
  await request(host, admin, "POST", `/v1/groups/${group.id}/members`, { user_id: people.member.userId })

  const action = { connection_id: connection.id, operation_id: "listPets" }
  const skill = await request(host, admin, "POST", "/v1/skills", { name: unique("Pets skill"), actions: [action] })
  const victimSkill = await request(host, admin, "POST", "/v1/skills", { name: unique("Victim"), actions: [action] })
  const user = { id: "fuzz-user", email: "fuzz@example.com" }
  const task = await request(host, admin, "POST", `/v1/agents/${agent.id}/invoke`, { input: { text: "hi", user } })

  // a task that waits for a person: its skill's listPets needs approval when `limit` is above 10
  const guarded = await request(host, admin, "POST", "/v1/skills", {
    name: unique("Guarded"),
    visibility: "organization",
    actions: [{
      ...action,
      requires_approval: true,
      approval_condition: { argument: "query_params.limit", op: "gt", value: 10 }
    }]
  })
  await request(host, admin, "POST", `/v1/skills/${guarded.id}/publish`)
  const asker = await request(
    host,
    admin,
    "POST",
    "/v1/agents",
    scripted("Asker", [{ tool_calls: [{ name: "listPets", arguments: { query_params: { limit: 50 } } }] }, {
      text: "done"
    }])
  )
  await request(host, admin, "PUT", `/v1/agents/${asker.id}/skills/${guarded.id}`)
  const waiting = await request(host, admin, "POST", `/v1/agents/${asker.id}/invoke?asynchronous=true`, {
    input: { text: "list", user }
  })
  await waitFor(host, admin, waiting.id, "waiting_approval")
  const approvals = await request(host, admin, "GET", `/v1/approvals?status=pending&task_id=${waiting.id}`)

  await signIn(host, superAdmin)
  const grants = await request(host, admin, "GET", "/v1/oauth/authorizations")

  const everyone = [...Object.values(people), victim]
  return {
    label,
    organizationId: created.organization_id,
    people,
    pausingAgent: asker.id,
    ids: {
      user_id: { use: everyone.map((p) => p.userId), spend: [victim.userId] },
      key_id: { use: everyone.map((p) => p.keyId), spend: [victim.keyId, victimKey.id] },
      agent_id: { use: [agent.id, asker.id], spend: [victimAgent.id] },
      task_id: { use: [task.id], spend: [task.id, waiting.id] },
      connector_id: { use: [connector.id], spend: [victimConnector.id] },
      connection_id: { use: [connection.id], spend: [victimConnection.id] },
      group_id: { use: [group.id], spend: [victimGroup.id] },
      skill_id: { use: [skill.id, guarded.id], spend: [victimSkill.id] },
      approval_id: { use: approvals.items.map((a: any) => a.id), spend: approvals.items.map((a: any) => a.id) },
      authorization_id: { use: [], spend: grants.items.map((g: any) => g.id) }
    }
  }
}

export const makeFuzzWorld = async (host: FuzzHost, targetUrl: string): Promise<FuzzWorld> => {
  const a = await makeOrganization(host, "A", targetUrl)
  const b = await makeOrganization(host, "B", targetUrl)
  const mcpTokens = {} as Record<Role, string>
  for (const role of ROLES) mcpTokens[role] = (await signIn(host, a.people[role])).access_token
  return {
    orgs: [a, b],
    mcpTokens,
    operations: OPERATIONS
  }
}
