import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BadRequestWire, ConflictWire, ForbiddenWire, NotFoundWire } from "./Errors.js"
import { AgentId, TaskId } from "./Ids.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { IntegerParam } from "./QueryParams.js"
import { Authentication } from "./Security.js"
import {
  Approval,
  ApprovalId,
  ApprovalPage,
  ApprovalStatus,
  AttachedSkill,
  CreateSkill,
  Decision,
  ManifestUpload,
  PublishReport,
  Skill,
  SkillAccess,
  SkillId,
  SkillPage,
  SkillStatus,
  SkillViolation,
  UpdateSkill
} from "./Skills.js"

// ids are checked by the handlers: an id that is not a UUID is a 404 like any unknown one
const SkillPath = Schema.Struct({ skill_id: SkillId })
const AgentSkillPath = Schema.Struct({ agent_id: AgentId, skill_id: SkillId })
const ApprovalPath = Schema.Struct({ approval_id: ApprovalId })
const page = {
  limit: Schema.optional(IntegerParam(1, 200)),
  cursor: Schema.optional(Schema.String)
}

export class SkillsApi extends HttpApiGroup.make("skills")
  .add(
    HttpApiEndpoint.get("listSkills", "/skills")
      .annotateContext(
        operation({
          summary: "List skills",
          permission: Policy.anyMember,
          errors: ["invalid_cursor"],
          access:
            "Admins see every skill; others the published catalog, their own, and skills scoped to agents they created."
        })
      )
      .setUrlParams(Schema.Struct({ status: Schema.optional(SkillStatus), ...page }))
      .addSuccess(SkillPage)
      .annotate(
        OpenApi.Description,
        "Skills the caller may see, newest first: Admins see all; others the published organization catalog, " +
          "their own, and skills scoped to agents they created."
      )
  )
  .add(
    HttpApiEndpoint.post("createSkill", "/skills")
      .annotateContext(
        operation({
          summary: "Create a skill",
          permission: Policy.createSkills,
          errors: ["invalid_skill", "unknown_agent", "skill_name_taken"]
        })
      )
      .setPayload(CreateSkill)
      .addSuccess(Skill, { status: 201 })
      .annotate(OpenApi.Description, "Create a skill. It starts as a `draft` until an Admin publishes it.")
  )
  .add(
    HttpApiEndpoint.post("publishManifest", "/skills/publish")
      .annotateContext(
        operation({
          summary: "Publish skills from a manifest",
          permission: Policy.publishManifests,
          errors: ["invalid_manifest", "invalid_skill", "skill_name_taken", "forbidden"]
        })
      )
      .setPayload(ManifestUpload)
      .addSuccess(PublishReport)
      .annotate(
        OpenApi.Description,
        "Publish the skills a repository's `switchyard.yaml` declares, with the OpenAPI documents it " +
          "refers to. Skills are matched by name: new ones are created, changed ones get a new version. An Admin's " +
          "upload publishes them; a Builder's leaves them as drafts. Errors name the manifest's line and field."
      )
  )
  .add(
    HttpApiEndpoint.get("listSkillViolations", "/skills/violations")
      .annotateContext(
        operation({
          summary: "List skill visibility violations",
          permission: Policy.readSkillViolations,
          errors: ["invalid_cursor"]
        })
      )
      .setUrlParams(
        Schema.Struct({ skill_id: Schema.optional(SkillId), agent_id: Schema.optional(AgentId), ...page })
      )
      .addSuccess(
        Schema.Struct({ items: Schema.Array(SkillViolation), next_cursor: Schema.NullOr(Schema.String) }).annotations({
          identifier: "SkillViolationPage"
        })
      )
      .annotate(
        OpenApi.Description,
        "Visibility violations recorded under SERVICE_SKILL_VISIBILITY_MODE=report: attaching a skill " +
          "outside its visibility, and each use of it by a run."
      )
  )
  .add(
    HttpApiEndpoint.get("getSkill", "/skills/:skill_id")
      .annotateContext(operation({ summary: "Get a skill", permission: Policy.anyMember, errors: [] }))
      .setPath(SkillPath)
      .addSuccess(Skill)
  )
  .add(
    HttpApiEndpoint.patch("updateSkill", "/skills/:skill_id")
      .annotateContext(
        operation({
          summary: "Change a skill",
          permission: Policy.anyMember,
          errors: ["forbidden", "skill_archived", "invalid_skill", "skill_name_taken"],
          access: "The skill's owner, or Admin and above."
        })
      )
      .setPath(SkillPath)
      .setPayload(UpdateSkill)
      .addSuccess(Skill)
      .annotate(OpenApi.Description, "Change name, description or actions: a new version.")
  )
  .add(
    HttpApiEndpoint.put("setSkillAccess", "/skills/:skill_id/access")
      .annotateContext(
        operation({
          summary: "Set a skill's visibility and allowlist",
          permission: Policy.anyMember,
          errors: ["forbidden", "unknown_agent", "skill_archived"],
          access: "The skill's owner, or Admin and above."
        })
      )
      .setPath(SkillPath)
      .setPayload(SkillAccess)
      .addSuccess(Skill)
      .annotate(OpenApi.Description, "Set visibility and allowlist (owner, Admin or Super admin only). Audited.")
  )
  .add(
    HttpApiEndpoint.post("publishSkill", "/skills/:skill_id/publish")
      .annotateContext(
        operation({ summary: "Publish a skill", permission: Policy.publishSkills, errors: ["skill_archived"] })
      )
      .setPath(SkillPath)
      .addSuccess(Skill)
      .annotate(OpenApi.Description, "Approve a skill for the organization. Audited.")
  )
  .add(
    HttpApiEndpoint.post("archiveSkill", "/skills/:skill_id/archive")
      .annotateContext(
        operation({
          summary: "Archive a skill",
          permission: Policy.anyMember,
          errors: ["forbidden", "skill_archived"],
          access: "The skill's owner, or Admin and above."
        })
      )
      .setPath(SkillPath)
      .addSuccess(Skill)
      .annotate(OpenApi.Description, "Retire a skill: runs no longer get its tools. Audited.")
  )
  .add(
    HttpApiEndpoint.get("listAgentSkills", "/agents/:agent_id/skills")
      .annotateContext(operation({ summary: "List an agent's skills", permission: Policy.anyMember, errors: [] }))
      .setPath(Schema.Struct({ agent_id: AgentId }))
      .addSuccess(Schema.Array(AttachedSkill))
      .annotate(OpenApi.Description, "The skills added to an agent, and whether their visibility admits it.")
  )
  .add(
    HttpApiEndpoint.put("attachSkill", "/agents/:agent_id/skills/:skill_id")
      .annotateContext(
        operation({
          summary: "Add a skill to an agent",
          permission: Policy.addSkillsToAgents,
          errors: ["skill_not_published", "skill_not_allowed", "skill_archived", "forbidden"],
          access: "And the agent's creator, or Admin and above."
        })
      )
      .setPath(AgentSkillPath)
      .addSuccess(AttachedSkill)
      .annotate(
        OpenApi.Description,
        "Add a published skill to an agent you manage. Under SERVICE_SKILL_VISIBILITY_MODE=enforce a skill whose " +
          "visibility does not admit the agent is refused (403 `skill_not_allowed`); under `report` it is added " +
          "and recorded as a violation."
      )
  )
  .add(
    HttpApiEndpoint.del("detachSkill", "/agents/:agent_id/skills/:skill_id")
      .annotateContext(
        operation({
          summary: "Remove a skill from an agent",
          permission: Policy.anyMember,
          errors: ["forbidden"],
          access: "The agent's creator, or Admin and above."
        })
      )
      .setPath(AgentSkillPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Skills")
  .annotate(
    OpenApi.Description,
    "Reusable sets of connector actions, their visibility, publishing and the agents that hold them (docs/guides/skills.md)."
  )
{}

export class ApprovalsApi extends HttpApiGroup.make("approvals")
  .add(
    HttpApiEndpoint.get("listApprovals", "/approvals")
      .annotateContext(
        operation({ summary: "List approval requests", permission: Policy.listApprovals, errors: ["invalid_cursor"] })
      )
      .setUrlParams(
        Schema.Struct({ status: Schema.optional(ApprovalStatus), task_id: Schema.optional(TaskId), ...page })
      )
      .addSuccess(ApprovalPage)
      .annotate(OpenApi.Description, "Approval requests, newest first.")
  )
  .add(
    HttpApiEndpoint.get("getApproval", "/approvals/:approval_id")
      .annotateContext(
        operation({
          summary: "Get an approval request",
          permission: Policy.anyMember,
          errors: [],
          access: "Any member of the organization (a runtime's Member key waits on its command's request); a key " +
            "limited to agents: their requests only."
        })
      )
      .setPath(ApprovalPath)
      .addSuccess(Approval)
      .setUrlParams(Schema.Struct({
        wait: Schema.optional(IntegerParam(0, 60)).annotations({
          description: "Seconds (0-60) to wait for a pending request to be decided before answering: a long " +
            "poll. The answer comes as soon as it is decided or expires, else with `status: pending` after `wait`."
        })
      }))
  )
  .add(
    HttpApiEndpoint.post("approve", "/approvals/:approval_id/approve")
      .annotateContext(
        operation({ summary: "Approve a tool call", permission: Policy.approveToolCalls, errors: ["approval_decided"] })
      )
      .annotate(OpenApi.Identifier, "approveApproval")
      .setPath(ApprovalPath)
      .setPayload(Schema.NullOr(Decision))
      .addSuccess(Approval)
      .annotate(OpenApi.Description, "Approve: the task goes on and makes the call. 409 once decided.")
  )
  .add(
    HttpApiEndpoint.post("reject", "/approvals/:approval_id/reject")
      .annotateContext(
        operation({ summary: "Reject a tool call", permission: Policy.rejectToolCalls, errors: ["approval_decided"] })
      )
      .annotate(OpenApi.Identifier, "rejectApproval")
      .setPath(ApprovalPath)
      .setPayload(Schema.NullOr(Decision))
      .addSuccess(Approval)
      .annotate(
        OpenApi.Description,
        "Reject: the task goes on without the call; the model is told it was rejected, and why."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Approvals")
  .annotate(
    OpenApi.Description,
    "Tool calls waiting for a person's approval, and the decisions (docs/guides/skills.md)."
  )
{}
