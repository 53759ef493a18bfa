import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { Agent, type CreateAgent, type ModelConfig, type UpdateAgent } from "../../schema/Agents.js"
import { BadRequest, NotFound } from "../../schema/Errors.js"
import type { AgentId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { AuditLog, changedFields } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { Connections } from "../connectors/Connections.js"
import { transactionIn } from "../db/Transaction.js"
import { requireOrganizationKey, requirePermission } from "../identity/IdentityPolicy.js"
import { AGENT_DELETED, ScheduleRepo } from "../schedules/ScheduleRepo.js"
import { listOrPage, type PageParams } from "../support/Cursor.js"
import { isHttpUrl } from "../support/HttpUrl.js"
import { invalidField } from "../support/Issues.js"
import { type AgentFields, AgentRepo, type AgentRow } from "./AgentRepo.js"
import { BudgetLeases } from "./BudgetLeases.js"
import { makePriceTable } from "./Prices.js"

const DEFAULT_MAX_STEPS = 10

const defaultModelName: Record<ModelConfig["provider"], string | undefined> = {
  openai: "gpt-4.1-mini",
  anthropic: "claude-sonnet-4-5",
  "openai-chat": undefined,
  scripted: "scripted"
}

export const toAgent = (row: AgentRow, spent: number) =>
  new Agent({
    id: row.id,
    name: row.name,
    instructions: row.instructions,
    model: row.model,
    skills: row.skills,
    budget: row.budget,
    spent_usd: spent,
    max_steps: row.max_steps,
    max_tokens: row.max_tokens,
    timeout_seconds: row.timeout_seconds,
    version: row.version,
    created_at: row.created_at,
    updated_at: row.updated_at
  })

/** An organization key limited to agents sees only those; everything else looks absent. */
export const mayUse = (principal: Principal, id: AgentId) =>
  principal.agentIds === null || principal.agentIds.includes(id)

/**
 * An agent named as a filter (`agent_id`): 404 unless it is the organization's and the key may use it. A deleted
 * agent passes: its tasks' usage and events are still its organization's.
 */
export const requireFilterAgent = (
  repo: Pick<AgentRepo, "findById">,
  principal: Principal,
  id: AgentId
) =>
  Effect.gen(function*() {
    const agent = mayUse(principal, id) ? yield* repo.findById(id) : undefined
    if (agent?.organization_id !== principal.organizationId) return yield* NotFound.of("Agent", id)
  })

/** Agents: a model, instructions, the skills (connector operations) it holds, limits and a budget. */
export class Agents extends Effect.Service<Agents>()("agents/Agents", {
  effect: Effect.gen(function*() {
    const repo = yield* AgentRepo
    const connections = yield* Connections
    const audit = yield* AuditLog
    const leases = yield* BudgetLeases
    const schedules = yield* ScheduleRepo
    const prices = makePriceTable((yield* SwitchyardConfig).modelPrices)
    const transaction = transactionIn(yield* SqlClient.SqlClient)

    /** A budget is kept by the model's price: with none, calls cost nothing and it could never stop one. */
    const checkBudget = (model: ModelConfig, budget: AgentFields["budget"]) => {
      const name = model.name ?? defaultModelName[model.provider] ?? model.provider
      return budget === null || prices.priceOf(name) !== undefined
        ? Effect.void
        : Effect.fail(invalidField(
          "budget",
          `can't be kept: the model '${name}' has no price here, so its calls would cost nothing. Set its ` +
            "price (USD per million tokens) in SWITCHYARD_MODEL_PRICES, or leave the budget out."
        ))
    }

    const checkModel = (model: ModelConfig) => {
      if (model.provider === "scripted" && (model.script === undefined || model.script.length === 0)) {
        return Effect.fail(invalidField("model.script", "is required for a `scripted` model: a list of turns to play."))
      }
      if (model.provider !== "scripted" && model.script !== undefined) {
        return Effect.fail(invalidField("model.script", "is for the `scripted` provider only."))
      }
      if (model.name === undefined && defaultModelName[model.provider] === undefined) {
        return Effect.fail(invalidField("model.name", "is required for `openai-chat` (the model your server serves)."))
      }
      if (
        model.base_url !== undefined &&
        !isHttpUrl(model.base_url)
      ) {
        return Effect.fail(invalidField("model.base_url", "must be an absolute http(s) URL."))
      }
      return Effect.succeed({ ...model, name: model.name ?? defaultModelName[model.provider]! })
    }

    /** Every skill names a connection the creator may use and operations it has; tool names stay unique. */
    const checkSkills = (principal: Principal, skills: CreateAgent["skills"]) =>
      Effect.gen(function*() {
        const names = new Set<string>()
        for (const [i, skill] of (skills ?? []).entries()) {
          for (const ref of skill.operation_ids) {
            const target = yield* connections.target(principal, "_", skill.connection_id, ref).pipe(
              Effect.mapError((e) => BadRequest.of(`\`skills[${i}]\`: ${e.message}`, undefined, "invalid_skill"))
            )
            if (names.has(target.operation.operationId)) {
              return yield* BadRequest.of(
                `\`skills[${i}]\`: two skills would both be the tool '${target.operation.operationId}'; give one agent only one.`,
                undefined,
                "invalid_skill"
              )
            }
            names.add(target.operation.operationId)
          }
        }
        return skills ?? []
      })

    const get = (principal: Principal, id: AgentId, lock = false): Effect.Effect<AgentRow, NotFound> =>
      (mayUse(principal, id) ? repo.find(principal.organizationId, id, lock) : Effect.succeed(undefined)).pipe(
        Effect.flatMap((row) => row === undefined ? Effect.fail(NotFound.of("Agent", id)) : Effect.succeed(row))
      )

    // what this node spent and has not reported yet is counted: a task that ended here shows in the spend
    // (waiting a second at most: while the agent's entity moves to another node, a read goes on without it)
    const present = (row: AgentRow) =>
      Effect.zipRight(
        row.budget === null ? Effect.void : Effect.ignore(Effect.timeout(leases.report(row.id), "1 second")),
        Effect.map(repo.spent(row.id, row.budget), (spent) => toAgent(row, spent))
      )

    const create = Effect.fn("Agents.create")(function*(principal: Principal, input: CreateAgent) {
      yield* requireOrganizationKey(principal, Policy.createAgents)
      const fields: AgentFields = {
        name: input.name,
        instructions: input.instructions ?? "",
        model: yield* checkModel(input.model),
        skills: yield* checkSkills(principal, input.skills),
        budget: input.budget ?? null,
        max_steps: input.max_steps ?? DEFAULT_MAX_STEPS,
        max_tokens: input.max_tokens ?? null,
        timeout_seconds: input.timeout_seconds ?? null
      }
      yield* checkBudget(fields.model, fields.budget)
      const row = yield* repo.insert({
        ...fields,
        id: Crypto.randomUUID() as AgentId,
        organization_id: principal.organizationId,
        created_by: principal.userId
      }).pipe(audit.recorded(principal, (row) => ({
        action: "CREATE_AGENT",
        targets: [{ type: "agent", id: row.id, name: row.name }]
      })))
      return toAgent(row, 0)
    })

    const update = Effect.fn("Agents.update")(function*(principal: Principal, id: AgentId, input: UpdateAgent) {
      yield* requirePermission(principal, Policy.changeAgents)
      const { row, written } = yield* transaction(changeLocked(principal, id, input))
      if (written) {
        // a changed budget or model (a call's worst case) gets a fresh look: calls are tried again
        if (input.budget !== undefined || input.model !== undefined) yield* repo.clearExhausted(id)
        // a budget lowered: this node's lease of the old one goes back at once (others' at their next report)
        if (input.budget !== undefined) yield* Effect.ignore(Effect.timeout(leases.recheck(id), "1 second"))
      }
      return yield* present(row)
    })

    /**
     * The change, with the agent's row locked from its read to its write: two PATCHes at once (a rename and new
     * instructions) each apply to what the other wrote, each its own version, rather than the later writing
     * back what the earlier changed.
     */
    const changeLocked = (principal: Principal, id: AgentId, input: UpdateAgent) =>
      Effect.gen(function*() {
        const current = yield* get(principal, id, true)
        const fields: AgentFields = {
          name: input.name ?? current.name,
          instructions: input.instructions ?? current.instructions,
          model: input.model === undefined ? current.model : yield* checkModel(input.model),
          skills: input.skills === undefined ? current.skills : yield* checkSkills(principal, input.skills),
          budget: input.budget === undefined ? current.budget : input.budget,
          max_steps: input.max_steps ?? current.max_steps,
          max_tokens: input.max_tokens === undefined ? current.max_tokens : input.max_tokens,
          timeout_seconds: input.timeout_seconds === undefined ? current.timeout_seconds : input.timeout_seconds
        }
        if (input.budget !== undefined || input.model !== undefined) yield* checkBudget(fields.model, fields.budget)
        // none when nothing changes (`{}`, what it holds already): not written, no version, nothing audited
        const row = yield* repo.update(principal.organizationId, id, fields).pipe(
          audit.recorded(principal, (row) =>
            row === undefined || changedFields(input).length === 0 ? undefined : {
              action: "UPDATE_AGENT",
              targets: [{ type: "agent", id, name: row.name }],
              details: { changed: changedFields(input) }
            })
        )
        return row === undefined ? { row: current, written: false } : { row, written: true }
      })

    /** Every agent the principal may use, or with `limit`/`cursor` a page of them (`total` counts them all). */
    const list = Effect.fn("Agents.list")(function*(
      principal: Principal,
      params: PageParams = {}
    ) {
      const { agentIds, organizationId } = principal
      const { next_cursor, rows, total } = yield* listOrPage(
        params,
        (page) => repo.list(organizationId, agentIds, page),
        repo.count(organizationId, agentIds)
      )
      const items = yield* Effect.forEach(rows, present, { concurrency: 4 })
      return { items, total, next_cursor }
    })

    const describe = (principal: Principal, id: AgentId) => Effect.flatMap(get(principal, id), present)

    const remove = Effect.fn("Agents.remove")(function*(principal: Principal, id: AgentId) {
      yield* requirePermission(principal, Policy.deleteAgents)
      const current = yield* get(principal, id)
      // its schedules are paused with it, in its transaction: left enabled, each run would fail for good
      const pauseSchedules = Effect.flatMap(
        schedules.pauseOfAgent(principal.organizationId, id),
        (paused) =>
          Effect.forEach(paused, (s) =>
            audit.record(principal, {
              action: "PAUSE_SCHEDULE",
              targets: [{ type: "schedule", id: s.id, name: s.name }],
              details: { reason: AGENT_DELETED, agent_id: id }
            }), { discard: true })
      )
      yield* repo.remove(principal.organizationId, id).pipe(
        Effect.tap((removed) => removed ? pauseSchedules : Effect.void),
        audit.recorded(
          principal,
          (removed) =>
            removed ? { action: "DELETE_AGENT", targets: [{ type: "agent", id, name: current.name }] } : undefined
        )
      )
    })

    return { create, update, list, describe, get, remove } as const
  }),
  dependencies: [AgentRepo.Default, AuditLog.Default, ScheduleRepo.Default]
}) {}
