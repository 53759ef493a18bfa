import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Poll.js"
import type { TargetServer } from "../support/TargetServer.js"
import type { TestNode } from "../support/TestNode.js"
import { createAgent, invokeAgent, startPetWorld, waitForTask } from "./support.js"

let world: Awaited<ReturnType<typeof startPetWorld>>
let node: TestNode
let target: TargetServer
let apiKey: string
let connection: any
let db: pg.Client
beforeAll(async () => {
  world = await startPetWorld({ SWITCHYARD_TASK_SWEEP_INTERVAL: "300 millis" })
  ;({ apiKey, connection, node, target } = world)
  db = new pg.Client({ connectionString: node.databaseUrl })
  await db.connect()
})
afterAll(async () => {
  await db?.end()
  await world?.stop()
})

/**
 * A copy of a finished task, put back as `status` with the given thread: what a node that died leaves
 * behind (accepted and never delivered, or stopped half-way), with no Run message anywhere. `ownSnapshot`:
 * as a task made before agents had versions, with its own copy of the agent and no version.
 */
const orphanLike = async (taskId: string, status: "pending" | "executing", keepEvents: number, ownSnapshot = false) => {
  const id = crypto.randomUUID()
  await db.query(
    `INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input, agent_version,
       agent_snapshot, api_key_id, created_at, started_at, run_epoch)
     SELECT $1, t.organization_id, t.agent_id, $2, t.source, t.user_id, t.user_email, t.input,
       CASE WHEN $4 THEN NULL ELSE t.agent_version END, CASE WHEN $4 THEN v.snapshot END, t.api_key_id,
       now() - interval '5 seconds', CASE WHEN $2 = 'executing' THEN now() END,
       CASE WHEN $2 = 'executing' THEN 1 ELSE 0 END
     FROM tasks t JOIN agent_versions v ON v.agent_id = t.agent_id AND v.version = t.agent_version WHERE t.id = $3`,
    [id, status, taskId, ownSnapshot]
  )
  await db.query(
    `INSERT INTO task_events (task_id, seq, type, step_key, at, data)
     SELECT $1, seq, type, step_key, at, data FROM task_events WHERE task_id = $2 AND seq <= $3`,
    [id, taskId, keepEvents]
  )
  return id
}

/** The thread of a run of `toolAgent` (or any agent that makes one tool call, then answers). */
const TOOL_THREAD = ["user_message", "model_call", "tool_call", "model_call", "agent_message"]

const toolAgent = () =>
  createAgent(node, apiKey, {
    name: "recoverable",
    model: {
      provider: "scripted",
      script: [
        { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "{{input}}" } } }] },
        { text: "Result: {{last_tool_result}}" }
      ]
    },
    skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
  })

describe("the task sweep", () => {
  it("starts a pending task that no node was told to run", async () => {
    const agent = await toolAgent()
    const done = await (await invokeAgent(node, apiKey, agent.id, "first")).json()
    expect(done.status).toBe("completed")
    const orphan = await orphanLike(done.id, "pending", 0)
    const task = await waitForTask(node, apiKey, orphan)
    expect(task.status).toBe("completed")
    expect(task.result).toContain("/pets/first")
  })

  it("runs a task made before agents had versions, with the agent copy it carries", async () => {
    const agent = await toolAgent()
    const done = await (await invokeAgent(node, apiKey, agent.id, "older")).json()
    const orphan = await orphanLike(done.id, "pending", 0, true)
    const task = await waitForTask(node, apiKey, orphan)
    expect(task).toMatchObject({ status: "completed", agent_version: null })
    expect(task.result).toContain("/pets/older")
  })

  it("versions an agent written by a node that knows nothing of versions, and runs that version", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "written by an older node",
      model: { provider: "scripted", script: [{ text: "before" }] }
    })
    // what a node of the previous release does on PATCH, during a rolling upgrade
    await db.query(
      `UPDATE agents SET model = '{"provider": "scripted", "script": [{"text": "after"}]}', updated_at = now()
       WHERE id = $1`,
      [agent.id]
    )
    expect((await (await node.fetch(`/v1/agents/${agent.id}`, { apiKey })).json()).version).toBe(2)
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi")).json()
    expect(task).toMatchObject({ status: "completed", result: "after", agent_version: 2 })
  })

  it("resumes an executing task half-way, replaying the tool call it had recorded", async () => {
    const agent = await toolAgent()
    const done = await (await invokeAgent(node, apiKey, agent.id, "second")).json()
    const calls = () => target.requests.filter((r) => r.path === "/pets/second").length
    expect(calls()).toBe(1)
    // model call, tool call (the user's message is the task's own): the node died before the last model call
    const orphan = await orphanLike(done.id, "executing", 2)
    const task = await waitForTask(node, apiKey, orphan)
    expect(task.status).toBe("completed")
    expect(task.result).toContain("/pets/second")
    expect(calls()).toBe(1)
    const thread = await (await node.fetch(`/v1/tasks/${orphan}/thread`, { apiKey }))
      .json()
    expect(thread.events.map((e: any) => e.type)).toEqual(TOOL_THREAD)
  })
})

describe("a run whose task another run claimed (a node that lost the shard and does not know it yet)", () => {
  /** An agent whose first model call takes `ms`, then calls getPet with the task's input, then answers. */
  const slowAgent = (ms: number) =>
    createAgent(node, apiKey, {
      name: "slow first step",
      model: {
        provider: "scripted",
        script: [
          { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "{{input}}" } } }], delay_ms: ms },
          { text: "Result: {{last_tool_result}}" }
        ]
      },
      skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
    })
  const callsTo = (pet: string) => target.requests.filter((r) => r.path === `/pets/${pet}`).length
  const typesOf = async (id: string) =>
    (await (await node.fetch(`/v1/tasks/${id}/thread`, { apiKey })).json()).events.map((e: any) => e.type)
  const usageRows = async (id: string) =>
    Number((await db.query("SELECT count(*) FROM llm_usage WHERE task_id = $1", [id])).rows[0].count)

  it("writes nothing once its claim is gone, and the task's next run makes each call once", async () => {
    const agent = await slowAgent(1500)
    const accepted = await (await invokeAgent(node, apiKey, agent.id, "fenced-1", { async: true })).json()
    await new Promise((r) => setTimeout(r, 300))
    // what another node's claim does, while the model call is in flight
    await db.query("UPDATE tasks SET run_epoch = run_epoch + 1 WHERE id = $1", [accepted.id])
    const task = await waitForTask(node, apiKey, accepted.id)
    expect(task.status).toBe("completed")
    expect(callsTo("fenced-1")).toBe(1)
    // the first run's model call is not in the thread, but its cost is: it was made and paid for
    expect(await typesOf(accepted.id)).toEqual(TOOL_THREAD)
    expect(await usageRows(accepted.id)).toBe(3)
  })

  it("ends the task when its claim went after its last write: its answer stands, and nothing runs on", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "slow answer",
      model: { provider: "scripted", script: [{ text: "answered", delay_ms: 1000 }] }
    })
    const accepted = await (await invokeAgent(node, apiKey, agent.id, "fenced-end", { async: true })).json()
    await new Promise((r) => setTimeout(r, 300))
    await db.query("UPDATE tasks SET run_epoch = run_epoch + 1 WHERE id = $1", [accepted.id])
    const task = await waitForTask(node, apiKey, accepted.id)
    expect(task).toMatchObject({ status: "completed", result: "answered" })
    expect(await typesOf(accepted.id)).toEqual(["user_message", "model_call", "agent_message"])
    // the end is not fenced (it made no call another run depends on): one model call, no second run
    await new Promise((r) => setTimeout(r, 1000))
    expect(await usageRows(accepted.id)).toBe(1)
  })

  it("makes no tool call while another run claims the task: its write waits for the claim, and does nothing", async () => {
    const agent = await slowAgent(1000)
    const accepted = await (await invokeAgent(node, apiKey, agent.id, "fenced-2", { async: true })).json()
    await new Promise((r) => setTimeout(r, 300))
    // a claim in progress (not yet committed) while the model answers: the run's record of the model call,
    // which also marks the tool call made, waits for the claim's outcome
    const claimer = new pg.Client({ connectionString: node.databaseUrl })
    await claimer.connect()
    try {
      await claimer.query("BEGIN")
      await claimer.query("UPDATE tasks SET run_epoch = run_epoch + 1 WHERE id = $1", [accepted.id])
      const waiting = () =>
        db.query(
          "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO task_calls%'"
        ).then((r) => Number(r.rows[0].count))
      await eventually(async () => (await waiting()) > 0 || undefined, 10_000, "the run's write to wait")
      expect(await waiting()).toBe(1)
      expect(callsTo("fenced-2")).toBe(0)
      await claimer.query("COMMIT")
    } finally {
      await claimer.end()
    }
    const task = await waitForTask(node, apiKey, accepted.id)
    expect(task.status).toBe("completed")
    expect(callsTo("fenced-2")).toBe(1)
    // the first run wrote nothing (neither the model call nor the mark): the next calls the model again, and
    // makes the call itself
    const thread = await (await node.fetch(`/v1/tasks/${accepted.id}/thread`, { apiKey })).json()
    expect(thread.events.map((e: any) => e.type)).toEqual(TOOL_THREAD)
    expect(thread.events[2].data).toMatchObject({ outcome: "ok", status: 200 })
    expect(await usageRows(accepted.id)).toBe(3)
  })

  it("does not make again a call an earlier run was making when it stopped: the model hears its outcome is unknown", async () => {
    const agent = await toolAgent()
    const done = await (await invokeAgent(node, apiKey, agent.id, "in-flight")).json()
    expect(callsTo("in-flight")).toBe(1)
    // the node died after marking the tool call made and before recording it: only the model call is in the thread
    const orphan = await orphanLike(done.id, "executing", 1)
    await db.query("INSERT INTO task_calls (task_id, step_key) VALUES ($1, 't:1:0')", [orphan])
    const task = await waitForTask(node, apiKey, orphan)
    expect(task.status).toBe("completed")
    expect(task.result).toContain("may or may not have taken effect")
    expect(callsTo("in-flight")).toBe(1)
    const thread = await (await node.fetch(`/v1/tasks/${orphan}/thread`, { apiKey })).json()
    expect(thread.events.find((e: any) => e.type === "tool_call").data).toMatchObject({
      name: "getPet",
      outcome: "unknown",
      status: null
    })
  })
})

describe("a long poll", () => {
  it("answers once its task ended, also when the end was never announced", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "ends late",
      model: { provider: "scripted", script: [{ text: "done", delay_ms: 1500 }] }
    })
    const accepted = await (await invokeAgent(node, apiKey, agent.id, "late", { async: true })).json()
    const started = Date.now()
    const polled = node.fetch(`/v1/tasks/${accepted.id}?wait=60`, { apiKey }).then((r) => r.json())
    await new Promise((r) => setTimeout(r, 300))
    // an end committed behind the run's back, as a run interrupted mid-commit or a lost notification
    // leaves it: the run's own end then finds the task ended, and nothing wakes the poll
    await db.query(
      "UPDATE tasks SET status = 'completed', result = 'ended elsewhere', finished_at = now() WHERE id = $1",
      [accepted.id]
    )
    const task = await polled
    expect(task.status).toBe("completed")
    expect(task.result).toBe("ended elsewhere")
    // a poll that waits for news re-reads the task every few seconds, well before its 60 s are up
    expect(Date.now() - started).toBeLessThan(30_000)
  }, 90_000)
})

describe("a task's thread", () => {
  const threadOf = async (id: string) => (await (await node.fetch(`/v1/tasks/${id}/thread`, { apiKey })).json()).events

  /** A new task row like `taskId`'s, with its ending (status, result, finished_at) as given; no events. */
  const endedCopy = async (taskId: string, end: { status: string; result: string; finished: boolean }) => {
    const id = crypto.randomUUID()
    await db.query(
      `INSERT INTO tasks (id, organization_id, agent_id, status, result, source, user_id, user_email, input,
         agent_version, created_at, started_at, finished_at)
       SELECT $1, organization_id, agent_id, $3, $4, source, user_id, user_email, input, agent_version,
         created_at, started_at, CASE WHEN $5 THEN finished_at END
       FROM tasks WHERE id = $2`,
      [id, taskId, end.status, end.result, end.finished]
    )
    return id
  }

  it("opens with the user's message and closes with the answer, both kept once, on the task's row", async () => {
    const agent = await toolAgent()
    const task = await (await invokeAgent(node, apiKey, agent.id, "third")).json()
    expect(task.status).toBe("completed")
    const { rows: [row] } = await db.query("SELECT agent_snapshot, input FROM tasks WHERE id = $1", [task.id])
    // no copy of the agent: the task names its version
    expect(row).toEqual({ agent_snapshot: null, input: "third" })
    const stored = await db.query("SELECT seq, type FROM task_events WHERE task_id = $1 ORDER BY seq", [task.id])
    expect(stored.rows).toEqual([
      { seq: 1, type: "model_call" },
      { seq: 2, type: "tool_call" },
      { seq: 3, type: "model_call" }
    ])
    const events = await threadOf(task.id)
    expect(events.map((e: any) => [e.seq, e.type])).toEqual([
      [1, "user_message"],
      [2, "model_call"],
      [3, "tool_call"],
      [4, "model_call"],
      [5, "agent_message"]
    ])
    expect(events[0]).toMatchObject({ at: task.created_at, data: { text: "third" } })
    expect(events[4]).toMatchObject({ at: task.finished_at, data: { text: task.result } })
  })

  it("closes with the error when the task failed", async () => {
    const agent = await createAgent(node, apiKey, { name: "no provider", model: { provider: "anthropic" } })
    const task = await (await invokeAgent(node, apiKey, agent.id, "hello")).json()
    expect(task.status).toBe("error")
    const events = await threadOf(task.id)
    expect(events.map((e: any) => e.type)).toEqual(["user_message", "error"])
    expect(events[1]).toMatchObject({ seq: 2, at: task.finished_at, data: { message: task.result } })
  })

  it("reads the thread of a task ended by hand without an end time", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "by hand",
      model: { provider: "scripted", script: [{ text: "x" }] }
    })
    const done = await (await invokeAgent(node, apiKey, agent.id, "anything")).json()
    const id = await endedCopy(done.id, { status: "error", result: "ended by an operator", finished: false })
    const response = await node.fetch(`/v1/tasks/${id}/thread`, { apiKey })
    expect(response.status).toBe(200)
    const events = (await response.json()).events
    expect(events.map((e: any) => e.type)).toEqual(["user_message", "error"])
    expect(events[1].data).toEqual({ message: "ended by an operator" })
  })

  it("shows a thread recorded whole by an earlier release as it was, nothing twice", async () => {
    const agent = await createAgent(node, apiKey, {
      name: "earlier",
      model: { provider: "scripted", script: [{ text: "old answer" }] }
    })
    const done = await (await invokeAgent(node, apiKey, agent.id, "old question")).json()
    // the same task as a node of the previous release recorded it: the user's message and the answer too
    const id = await endedCopy(done.id, { status: "completed", result: "old answer", finished: true })
    await db.query(
      `INSERT INTO task_events (task_id, seq, type, step_key, at, data)
       SELECT $1, 2, type, step_key, at, data FROM task_events WHERE task_id = $2 AND seq = 1`,
      [id, done.id]
    )
    await db.query(
      `INSERT INTO task_events (task_id, seq, type, step_key, data) VALUES
         ($1, 1, 'user_message', 'user', '{"text": "old question", "user": {"id": "u", "email": "u@example.com"}}'),
         ($1, 3, 'agent_message', NULL, '{"text": "old answer"}')`,
      [id]
    )
    const events = await threadOf(id)
    expect(events.map((e: any) => [e.seq, e.type])).toEqual([
      [1, "user_message"],
      [2, "model_call"],
      [3, "agent_message"]
    ])
    expect(events[0].data).toEqual({ text: "old question" })
    expect(events[2].data).toEqual({ text: "old answer" })
  })
})
