import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import {
  AddGroupMember,
  CreateGroup,
  Group,
  GroupMemberPage,
  GroupMemberPath,
  GroupPage,
  GroupPath,
  PageUrlParams,
  UpdateGroup
} from "./Access.js"
import { BadRequestWire, ConflictWire, ForbiddenWire, NotFoundWire } from "./Errors.js"
import { Member } from "./Identity.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { Authentication } from "./Security.js"

/** Groups: members sharing defaults (a default role, default agents). Admin and above. */
export class GroupsApi extends HttpApiGroup.make("groups")
  .add(
    HttpApiEndpoint.get("listGroups", "/groups")
      .annotateContext(
        operation({ summary: "List groups", permission: Policy.manageGroups, errors: ["invalid_cursor"] })
      )
      .setUrlParams(PageUrlParams)
      .addSuccess(GroupPage)
      .annotate(OpenApi.Description, "Groups of the organization, oldest first.")
  )
  .add(
    HttpApiEndpoint.post("createGroup", "/groups")
      .annotateContext(
        operation({
          summary: "Create a group",
          permission: Policy.manageGroups,
          errors: ["group_name_taken", "unknown_agent"]
        })
      )
      .setPayload(CreateGroup)
      .addSuccess(Group, { status: 201 })
      .annotate(OpenApi.Description, "Create a group. 409 `group_name_taken`.")
  )
  .add(
    HttpApiEndpoint.get("getGroup", "/groups/:group_id")
      .annotateContext(operation({ summary: "Get a group", permission: Policy.manageGroups, errors: [] }))
      .setPath(GroupPath)
      .addSuccess(Group)
  )
  .add(
    HttpApiEndpoint.patch("updateGroup", "/groups/:group_id")
      .annotateContext(
        operation({
          summary: "Change a group",
          permission: Policy.manageGroups,
          errors: ["group_name_taken", "unknown_agent"]
        })
      )
      .setPath(GroupPath)
      .setPayload(UpdateGroup)
      .addSuccess(Group)
      .annotate(OpenApi.Description, "Change a group. A new default role applies to members added from then on.")
  )
  .add(
    HttpApiEndpoint.del("deleteGroup", "/groups/:group_id")
      .annotateContext(operation({ summary: "Delete a group", permission: Policy.manageGroups, errors: [] }))
      .setPath(GroupPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Description, "Delete a group. Its members keep their roles and stay in the organization.")
  )
  .add(
    HttpApiEndpoint.get("listGroupMembers", "/groups/:group_id/members")
      .annotateContext(
        operation({ summary: "List a group's members", permission: Policy.manageGroups, errors: ["invalid_cursor"] })
      )
      .setPath(GroupPath)
      .setUrlParams(PageUrlParams)
      .addSuccess(GroupMemberPage)
  )
  .add(
    HttpApiEndpoint.post("addGroupMember", "/groups/:group_id/members")
      .annotateContext(
        operation({
          summary: "Add someone to a group",
          permission: Policy.manageGroups,
          errors: ["already_in_group"],
          access: "A group whose default role is above the caller's own cannot be given members by them."
        })
      )
      .setPath(GroupPath)
      .setPayload(AddGroupMember)
      .addSuccess(Member, { status: 201 })
      .annotate(
        OpenApi.Description,
        "Add a member (`user_id`) or a person (`email`) to the group; the group's default role applies when it is " +
          "above theirs. 409 `already_in_group`."
      )
  )
  .add(
    HttpApiEndpoint.del("removeGroupMember", "/groups/:group_id/members/:user_id")
      .annotateContext(
        operation({ summary: "Remove someone from a group", permission: Policy.manageGroups, errors: [] })
      )
      .setPath(GroupMemberPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Description, "Remove a member from the group. Their role stays as it is.")
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Groups")
  .annotate(
    OpenApi.Description,
    "Groups of members: a default role for the people in them and the agents they may use (docs/guides/access-control.md)."
  )
{}
