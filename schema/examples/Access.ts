import { grace, member } from "./Identity.js"
import { adaId, agentId, at, baseUrl, created, list, ok, type OperationExample, page } from "./Story.js"

const groupId = "7e1d4c2b-9a8f-4b6e-8d3c-5f0a1b2c3d4e"
const alan = { id: "4b7c9e2a-1d3f-4a5b-8c6d-7e8f9a0b1c2d", email: "alan@example.com", name: "Alan Turing" }

const supportDesk = {
  name: "Support desk",
  description: "The support team: the support agent, and Member for people who join through it.",
  default_role: "member",
  agent_ids: [agentId]
}
const group = (member_count: number, updated_at: string) => ({
  id: groupId,
  ...supportDesk,
  member_count,
  created_at: at(14, "09:00:00"),
  updated_at
})

const ssoMapping = [{ idp_group: "support", group_id: groupId }]
const sso = {
  issuer: "https://login.example.com/realms/acme",
  client_id: "switchyard",
  client_secret_set: true,
  allowed_email_domains: ["example.com"],
  group_claim: "groups",
  group_mapping: ssoMapping,
  enabled: true,
  redirect_uri: `${baseUrl}/oauth_login/sso/callback`,
  created_at: at(14, "09:30:00"),
  updated_at: at(14, "09:30:00")
}

/** An MCP client Ada signed in with: a client registered at /oauth/register. */
const authorization = (revoked_at: string | null) => ({
  id: "m4q8s2w6y1b5",
  user_id: adaId,
  client_id: "sy_client_Xq7Lm2Rb9Tn4Vw6Kc1Hd8Jf3Pz5Gs2",
  client_name: "Acme support console",
  resource: `${baseUrl}/mcp/`,
  scopes: ["mcp:read", "mcp:write"],
  created_at: at(12, "10:00:00"),
  last_used_at: at(15, "09:05:00"),
  revoked_at
})

/** Groups, single sign-on and the MCP clients a person authorized. */
export const accessExamples: Record<string, OperationExample> = {
  createGroup: { request: supportDesk, response: created(group(0, at(14, "09:00:00"))) },
  listGroups: { response: ok(page(group(2, at(14, "09:00:00")))) },
  getGroup: { response: ok(group(2, at(14, "09:00:00"))) },
  updateGroup: {
    request: { description: "The support team and the agents it uses." },
    response: ok({
      ...group(2, at(15, "10:20:00")),
      description: "The support team and the agents it uses."
    })
  },
  addGroupMember: {
    request: { email: alan.email, name: alan.name },
    response: created(member(alan, "member", "Member", 14, "09:10:00"))
  },
  listGroupMembers: {
    // in the order they joined the group: Grace, then Alan (who joined the organization through it)
    response: ok(page(member(grace, "builder", "Builder", 13), member(alan, "member", "Member", 14, "09:10:00")))
  },
  putSso: {
    request: {
      issuer: sso.issuer,
      client_id: sso.client_id,
      client_secret: "oidc-client-secret",
      allowed_email_domains: sso.allowed_email_domains,
      group_mapping: ssoMapping
    },
    response: ok(sso)
  },
  getSso: { response: ok(sso) },
  listAuthorizations: { response: ok(list(authorization(null))) },
  revokeAuthorization: { response: ok(authorization(at(15, "10:30:00"))) }
}
