import { adaId, allOf, at, created, now, ok, type OperationExample, organizationId, personalKeyId } from "./Story.js"

const graceId = "c32d9726-1652-42a7-8fca-6552cd9b212c"
const ciKeyId = "k3x9m2p7q4wz"

export const ada = { id: adaId, email: "ada@example.com", name: "Ada Lovelace" }
export const grace = { id: graceId, email: "grace@example.com", name: "Grace Hopper" }

/** A membership: `created_at` is when the person joined the organization, whatever their role since. */
export const member = (
  who: typeof ada,
  role: "admin" | "builder" | "member",
  role_display: string,
  day: number,
  time = "08:00:00"
) => ({ user: who, role, role_display, created_at: at(day, time) })

interface KeyFields {
  readonly kind: string
  readonly name: string
  readonly role: string
  readonly user_id: string | null
  readonly created_at: string
}
const apiKey = (id: string, fields: KeyFields) => ({
  id,
  ...fields,
  prefix: `sy_${id}_`,
  agent_ids: null,
  last_used_at: now,
  revoked_at: null
})
const personalKey = apiKey(personalKeyId, {
  kind: "personal",
  name: "Ada's laptop",
  role: "admin",
  user_id: adaId,
  created_at: at(10, "08:01:00")
})
const ciKey = apiKey(ciKeyId, {
  kind: "organization",
  name: "CI deploys",
  role: "builder",
  user_id: null,
  created_at: at(10, "08:05:00")
})

export const identityExamples: Record<string, OperationExample> = {
  me: {
    response: ok({
      organization: { id: organizationId, name: "Acme Retail", created_at: at(10, "08:00:00") },
      user: ada,
      key: personalKey,
      role: "admin",
      role_display: "Admin"
    })
  },
  listMembers: { response: ok(allOf(member(ada, "admin", "Admin", 10), member(grace, "builder", "Builder", 13))) },
  createMember: {
    request: { email: grace.email, name: grace.name, role: "builder" },
    response: created(member(grace, "builder", "Builder", 13))
  },
  createApiKey: {
    request: { name: "CI deploys", kind: "organization", role: "builder" },
    response: created({
      ...ciKey,
      last_used_at: null,
      api_key: "sy_k3x9m2p7q4wz_bA-cNtTtSBlgj2Hn_TCJoiqj4QJ1EON8cL9WqS2TqLc"
    })
  },
  listApiKeys: { response: ok(allOf(personalKey, ciKey)) },
  updateMember: { request: { role: "admin" }, response: ok(member(grace, "admin", "Admin", 13)) },
  revokeApiKey: { response: ok({ ...ciKey, revoked_at: at(15, "10:10:00") }) }
}
