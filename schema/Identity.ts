import { Schema } from "effect"
import { AgentId, ApiKeyId, OrganizationId, UserId } from "./Ids.js"
import { optionalPage, PagedList } from "./QueryParams.js"
import { requestBody } from "./RequestBody.js"
import { Timestamp } from "./Timestamp.js"

export const Role = Schema.Literal("super_admin", "admin", "builder", "member").annotations({
  identifier: "Role",
  description:
    "Organization role, strongest first: `super_admin` (Super admin), `admin` (Admin), `builder` (Builder), `member` (Member)."
})
export type Role = typeof Role.Type

export const roleDisplayName: Record<Role, string> = {
  super_admin: "Super admin",
  admin: "Admin",
  builder: "Builder",
  member: "Member"
}

const roleRank: Record<Role, number> = { member: 0, builder: 1, admin: 2, super_admin: 3 }
/** Whether `role` is at least as strong as `minimum`. */
export const roleAtLeast = (role: Role, minimum: Role): boolean => roleRank[role] >= roleRank[minimum]

export class Organization extends Schema.Class<Organization>("Organization")({
  id: OrganizationId,
  name: Schema.String,
  created_at: Timestamp
}) {}

export class User extends Schema.Class<User>("User")({
  id: UserId,
  email: Schema.String,
  name: Schema.NullOr(Schema.String)
}) {}

export class Member extends Schema.Class<Member>("Member")({
  user: User,
  role: Role,
  role_display: Schema.String,
  created_at: Timestamp
}) {}

export const Email = Schema.Trim.pipe(
  Schema.minLength(3),
  Schema.maxLength(320),
  Schema.pattern(/^[^\s@]+@[^\s@]+$/, { message: () => "must be an e-mail address like ada@example.com" })
).annotations({ description: "E-mail address." })

export const CreateMember = Schema.Struct({
  email: Email,
  name: Schema.optional(Schema.String.pipe(Schema.maxLength(200))),
  role: Schema.optionalWith(Role, { default: () => "member" as const })
}).annotations({ identifier: "CreateMember", ...requestBody })
export type CreateMember = typeof CreateMember.Type

export const UpdateMember = Schema.Struct({
  role: Role
}).annotations({ identifier: "UpdateMember", ...requestBody })
export type UpdateMember = typeof UpdateMember.Type

export const ApiKeyKind = Schema.Literal("organization", "personal").annotations({
  description: "`organization`: for applications and pipelines, optionally limited to agents. " +
    "`personal`: carries one person's identity."
})
export type ApiKeyKind = typeof ApiKeyKind.Type

export class ApiKey extends Schema.Class<ApiKey>("ApiKey")({
  id: ApiKeyId,
  kind: ApiKeyKind,
  name: Schema.String,
  prefix: Schema.String.annotations({ description: "The non-secret start of the key, `sy_<id>_`, to recognise it." }),
  role: Role,
  user_id: Schema.NullOr(UserId),
  agent_ids: Schema.NullOr(Schema.Array(AgentId)).annotations({
    description: "Agents an organization key is limited to; `null` means every agent."
  }),
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp)
}) {}

export const CreateApiKey = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  kind: Schema.optionalWith(ApiKeyKind, { default: () => "personal" as const }),
  role: Schema.optional(Role).annotations({
    description: "Role of an organization key (default `member`); never above the creator's role."
  }),
  user_id: Schema.optional(UserId).annotations({
    description: "Personal keys only: issue the key for this member (Admin and above). Default: the caller."
  }),
  agent_ids: Schema.optional(Schema.Array(AgentId)).annotations({
    description: "Organization keys only: limit the key to these agents."
  })
}).annotations({ identifier: "CreateApiKey", ...requestBody })
export type CreateApiKey = typeof CreateApiKey.Type

export class CreatedApiKey extends Schema.Class<CreatedApiKey>("CreatedApiKey")({
  ...ApiKey.fields,
  api_key: Schema.String.annotations({ description: "The full key. Shown once: store it now." })
}) {}

export class Me extends Schema.Class<Me>("Me")({
  organization: Organization,
  user: Schema.NullOr(User),
  key: ApiKey,
  role: Role,
  role_display: Schema.String
}) {}

export const ListOf = <S extends Schema.Schema.Any>(item: S, identifier?: string) => {
  const list = Schema.Struct({ items: Schema.Array(item), total: Schema.Int })
  // named, a list is one schema of the document that generators can name too
  return identifier === undefined ? list : list.annotations({ identifier })
}

export const MemberList = PagedList(Member, "MemberList", "members")
export const MemberListParams = Schema.Struct(optionalPage("Members", "every member"))

export const ApiKeyList = PagedList(
  ApiKey,
  "ApiKeyList",
  "keys",
  "Newest first without `limit` and `cursor`; a page of them oldest first with either."
)
export const ApiKeyListParams = Schema.Struct(optionalPage("Keys", "every key"))
