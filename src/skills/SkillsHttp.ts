import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { AgentsLive } from "../agents/AgentsLive.js"
import { approvalAfter } from "../commands/ApprovalWait.js"
import { EventLog } from "../events/EventLog.js"
import { Approvals } from "./Approvals.js"
import { SkillManifests } from "./SkillManifests.js"
import { Skills } from "./Skills.js"

const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Principal, f)

export const SkillsHttpLive = HttpApiBuilder.group(Api, "skills", (handlers) =>
  Effect.gen(function*() {
    const skills = yield* Skills
    const manifests = yield* SkillManifests
    return handlers
      .handle("listSkills", ({ urlParams }) => as((p) => skills.list(p, urlParams)))
      .handle("createSkill", ({ payload }) => as((p) => skills.create(p, payload)))
      .handle("publishManifest", ({ payload }) => as((p) => manifests.publish(p, payload)))
      .handle("listSkillViolations", ({ urlParams }) => as((p) => skills.violations(p, urlParams)))
      .handle("getSkill", ({ path }) => as((p) => skills.get(p, path.skill_id)))
      .handle("updateSkill", ({ path, payload }) => as((p) => skills.update(p, path.skill_id, payload)))
      .handle("setSkillAccess", ({ path, payload }) => as((p) => skills.setAccess(p, path.skill_id, payload)))
      .handle("publishSkill", ({ path }) => as((p) => skills.setStatus(p, path.skill_id, "published")))
      .handle("archiveSkill", ({ path }) => as((p) => skills.setStatus(p, path.skill_id, "archived")))
      .handle("listAgentSkills", ({ path }) => as((p) => skills.attached(p, path.agent_id)))
      .handle("attachSkill", ({ path }) => as((p) => skills.attach(p, path.agent_id, path.skill_id)))
      .handle("detachSkill", ({ path }) => as((p) => skills.detach(p, path.agent_id, path.skill_id)))
  })).pipe(Layer.provide(SkillManifests.Default), Layer.provide(AgentsLive))

export const ApprovalsHttpLive = HttpApiBuilder.group(Api, "approvals", (handlers) =>
  Effect.gen(function*() {
    const approvals = yield* Approvals
    return handlers
      .handle("listApprovals", ({ urlParams }) => as((p) => approvals.list(p, urlParams)))
      .handle(
        "getApproval",
        ({ path, urlParams }) => as((p) => approvalAfter(p, path.approval_id, urlParams.wait ?? 0))
      )
      .handle("approve", ({ path, payload }) => as((p) => approvals.approve(p, path.approval_id, payload?.reason)))
      .handle("reject", ({ path, payload }) => as((p) => approvals.reject(p, path.approval_id, payload?.reason)))
  })).pipe(Layer.provide(AgentsLive), Layer.provide(EventLog.Default))
