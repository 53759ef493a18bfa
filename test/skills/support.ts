import { addMember, call } from "../access/support.js"
import { startPetWorld } from "../agents/support.js"
import type { TargetServer } from "../support/TargetServer.js"
import type { TestNode } from "../support/TestNode.js"

export interface SkillWorld {
  readonly node: TestNode
  readonly target: TargetServer
  readonly admin: string
  readonly organizationId: string
  /** Two builders: `owner` creates skills, `other` creates agents. */
  readonly owner: Awaited<ReturnType<typeof addMember>>
  readonly other: Awaited<ReturnType<typeof addMember>>
  readonly member: Awaited<ReturnType<typeof addMember>>
  readonly connectionId: string
  readonly stop: () => Promise<void>
}

/** A node (with these settings), a real target API behind a connection, and people in each role. */
export const startSkillWorld = async (env: Record<string, string> = {}): Promise<SkillWorld> => {
  const { apiKey: admin, connection, node, organizationId, stop, target } = await startPetWorld(env)
  return {
    node,
    target,
    admin,
    organizationId,
    owner: await addMember(node, admin, "builder"),
    other: await addMember(node, admin, "builder"),
    member: await addMember(node, admin, "member"),
    connectionId: connection.id,
    stop
  }
}

/** A skill of `getPet`/`listPets` actions, created by `key` and published by the admin. */
export const publishedSkill = async (
  w: SkillWorld,
  key: string,
  body: { name: string; visibility?: string; allowlist?: Array<string>; actions?: Array<unknown> }
) => {
  const created = await call(w.node, key, "POST", "/v1/skills", {
    actions: [{ connection_id: w.connectionId, operation_id: "getPet" }],
    ...body
  })
  if (created.status !== 201) throw new Error(`create skill: ${created.status} ${JSON.stringify(created.body)}`)
  const published = await call(w.node, w.admin, "POST", `/v1/skills/${created.body.id}/publish`)
  if (published.status !== 200) throw new Error(`publish: ${published.status} ${JSON.stringify(published.body)}`)
  return published.body
}

/** An agent whose scripted model calls `tool` with `args`, then answers with what the tool returned. */
export const toolAgent = async (w: SkillWorld, key: string, tool: string, args: unknown, name = "caller") => {
  const agent = await call(w.node, key, "POST", "/v1/agents", {
    name,
    model: {
      provider: "scripted",
      script: [{ tool_calls: [{ name: tool, arguments: args }] }, { text: "got: {{last_tool_result}}" }]
    }
  })
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`)
  return agent.body
}

export const run = (w: SkillWorld, key: string, agentId: string, text = "go") =>
  call(w.node, key, "POST", `/v1/agents/${agentId}/invoke`, {
    input: { text, user: { id: "u", email: "u@example.com" } }
  })

export const threadOf = async (w: SkillWorld, key: string, taskId: string) =>
  (await call(w.node, key, "GET", `/v1/tasks/${taskId}/thread`)).body.events as Array<any>

/** The task once its status is one of `statuses` (or as it is after 20 s). */
export const waitStatus = async (w: SkillWorld, taskId: string, statuses: Array<string>) => {
  const deadline = Date.now() + 20_000
  for (;;) {
    const task = (await call(w.node, w.admin, "GET", `/v1/tasks/${taskId}`)).body
    if (statuses.includes(task.status) || Date.now() > deadline) return task
    await new Promise((r) => setTimeout(r, 50))
  }
}
