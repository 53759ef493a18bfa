import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BadRequestWire, ConflictWire, ForbiddenWire, NotFoundWire } from "./Errors.js"
import { AgentId, TaskId } from "./Ids.js"
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
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 200))),
  cursor: Schema.optional(Schema.String)
}

export class SkillsApi extends HttpApiGroup.make("skills")
  .add(
    HttpApiEndpoint.get("listSkills", "/skills")
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
      .setPayload(CreateSkill)
      .addSuccess(Skill, { status: 201 })
      .annotate(OpenApi.Description, "Create a skill (Builder+). It starts as a `draft` until an Admin publishes it.")
  )
  .add(
    HttpApiEndpoint.post("publishManifest", "/skills/publish")
      .setPayload(ManifestUpload)
      .addSuccess(PublishReport)
      .annotate(
        OpenApi.Description,
        "Publish the skills a repository's `switchyard.yaml` declares (Builder+), with the OpenAPI documents it " +
          "refers to. Skills are matched by name: new ones are created, changed ones get a new version. An Admin's " +
          "upload publishes them; a Builder's leaves them as drafts. Errors name the manifest's line and field."
      )
  )
  .add(
    HttpApiEndpoint.get("listSkillViolations", "/skills/violations")
      .setUrlParams(
        Schema.Struct({ skill_id: Schema.optional(SkillId), agent_id: Schema.optional(AgentId), ...page })
      )
      .addSuccess(Schema.Struct({ items: Schema.Array(SkillViolation), next_cursor: Schema.NullOr(Schema.String) }))
      .annotate(
        OpenApi.Description,
        "Visibility violations recorded under SERVICE_SKILL_VISIBILITY_MODE=report (Admin+): attaching a skill " +
          "outside its visibility, and each use of it by a run."
      )
  )
  .add(HttpApiEndpoint.get("getSkill", "/skills/:skill_id").setPath(SkillPath).addSuccess(Skill))
  .add(
    HttpApiEndpoint.patch("updateSkill", "/skills/:skill_id")
      .setPath(SkillPath)
      .setPayload(UpdateSkill)
      .addSuccess(Skill)
      .annotate(OpenApi.Description, "Change name, description or actions (owner or Admin+): a new version.")
  )
  .add(
    HttpApiEndpoint.put("setSkillAccess", "/skills/:skill_id/access")
      .setPath(SkillPath)
      .setPayload(SkillAccess)
      .addSuccess(Skill)
      .annotate(OpenApi.Description, "Set visibility and allowlist (owner, Admin or Super admin only). Audited.")
  )
  .add(
    HttpApiEndpoint.post("publishSkill", "/skills/:skill_id/publish")
      .setPath(SkillPath)
      .addSuccess(Skill)
      .annotate(OpenApi.Description, "Approve a skill for the organization (Admin+). Audited.")
  )
  .add(
    HttpApiEndpoint.post("archiveSkill", "/skills/:skill_id/archive")
      .setPath(SkillPath)
      .addSuccess(Skill)
      .annotate(OpenApi.Description, "Retire a skill (owner or Admin+): runs no longer get its tools. Audited.")
  )
  .add(
    HttpApiEndpoint.get("listAgentSkills", "/agents/:agent_id/skills")
      .setPath(Schema.Struct({ agent_id: AgentId }))
      .addSuccess(Schema.Array(AttachedSkill))
      .annotate(OpenApi.Description, "The skills added to an agent, and whether their visibility admits it.")
  )
  .add(
    HttpApiEndpoint.put("attachSkill", "/agents/:agent_id/skills/:skill_id")
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
{}

export class ApprovalsApi extends HttpApiGroup.make("approvals")
  .add(
    HttpApiEndpoint.get("listApprovals", "/approvals")
      .setUrlParams(
        Schema.Struct({ status: Schema.optional(ApprovalStatus), task_id: Schema.optional(TaskId), ...page })
      )
      .addSuccess(ApprovalPage)
      .annotate(OpenApi.Description, "Approval requests, newest first (Admin+, or the asking task's agent's creator).")
  )
  .add(HttpApiEndpoint.get("getApproval", "/approvals/:approval_id").setPath(ApprovalPath).addSuccess(Approval))
  .add(
    HttpApiEndpoint.post("approve", "/approvals/:approval_id/approve")
      .setPath(ApprovalPath)
      .setPayload(Decision)
      .addSuccess(Approval)
      .annotate(OpenApi.Description, "Approve: the task goes on and makes the call (Admin+). 409 once decided.")
  )
  .add(
    HttpApiEndpoint.post("reject", "/approvals/:approval_id/reject")
      .setPath(ApprovalPath)
      .setPayload(Decision)
      .addSuccess(Approval)
      .annotate(
        OpenApi.Description,
        "Reject: the task goes on without the call; the model is told it was rejected, and why (Admin+)."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Approvals")
{}
