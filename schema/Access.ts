import { Schema } from "effect"
import { Email, Member, Role } from "./Identity.js"
import { AgentId, UserId, uuidId } from "./Ids.js"
import { IntegerParam } from "./QueryParams.js"
import { requestBody } from "./RequestBody.js"
import { Timestamp } from "./Timestamp.js"

export const GroupId = uuidId("GroupId", "a group", "Identifier of a group (UUID).")
export type GroupId = typeof GroupId.Type

const DefaultRole = Schema.NullOr(Role).annotations({
  description: "Role a member gets when added through this group, if it is above their own (never lowers a role). " +
    "`null`: the group changes no role."
})

const AgentIds = Schema.Array(AgentId).pipe(Schema.maxItems(500)).annotations({
  description: "Agents the group's members may use by default (ids of this organization's agents)."
})

export class Group extends Schema.Class<Group>("Group")({
  id: GroupId,
  name: Schema.String,
  description: Schema.String,
  default_role: DefaultRole,
  agent_ids: Schema.Array(AgentId),
  member_count: Schema.Int,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

const GroupName = Schema.Trim.pipe(Schema.minLength(1), Schema.maxLength(200))
const Description = Schema.String.pipe(Schema.maxLength(2000))

export const CreateGroup = Schema.Struct({
  name: GroupName,
  description: Schema.optional(Description),
  default_role: Schema.optional(DefaultRole),
  agent_ids: Schema.optional(AgentIds)
}).annotations({ identifier: "CreateGroup", ...requestBody })
export type CreateGroup = typeof CreateGroup.Type

export const UpdateGroup = Schema.Struct({
  name: Schema.optional(GroupName),
  description: Schema.optional(Description),
  default_role: Schema.optional(DefaultRole),
  agent_ids: Schema.optional(AgentIds)
}).annotations({ identifier: "UpdateGroup", ...requestBody })
export type UpdateGroup = typeof UpdateGroup.Type

export const AddGroupMember = Schema.Struct({
  user_id: Schema.optional(UserId).annotations({ description: "A member of the organization." }),
  email: Schema.optional(Email).annotations({
    description: "Or an e-mail: a person not yet in the organization is added to it (with the group's default role)."
  }),
  name: Schema.optional(Schema.String.pipe(Schema.maxLength(200))).annotations({
    description: "Name of a person added by `email`."
  })
}).annotations({ identifier: "AddGroupMember", ...requestBody })
export type AddGroupMember = typeof AddGroupMember.Type

export const GroupPath = Schema.Struct({ group_id: GroupId })
export const GroupMemberPath = Schema.Struct({ group_id: GroupId, user_id: UserId })

const PageParams = {
  limit: Schema.optional(IntegerParam(1, 200)).annotations({
    description: "Page size, 1–200 (default 50)."
  }),
  cursor: Schema.optional(Schema.String).annotations({ description: "The previous page's `next_cursor`." })
}
export const PageUrlParams = Schema.Struct(PageParams)

export const GroupPage = Schema.Struct({
  items: Schema.Array(Group),
  next_cursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "GroupPage" })

export const GroupMemberPage = Schema.Struct({
  items: Schema.Array(Member),
  next_cursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "GroupMemberPage" })
