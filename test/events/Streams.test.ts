import { Schema } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Event } from "../../schema/Events.js"
import { addMember } from "../access/support.js"
import { createAgent, invokeAgent, startPetWorld, waitForTask } from "../agents/support.js"
import { json } from "../connectors/support.js"
import { readEventStream } from "./support.js"

let world: Awaited<ReturnType<typeof startPetWorld>>
let db: pg.Pool
beforeAll(async () => {
  world = await startPetWorld()
  db = new pg.Pool({ connectionString: world.node.databaseUrl, max: 2 })
})
afterAll(async () => {
  await db?.end()
  await world?.stop()
})

const decode = Schema.decodeUnknownSync(Event)

interface Received {
  readonly id: string
  readonly event: string
  readonly data: any
}

/** Opens a stream; collects its events until `until` says stop, the stream ends, or `ms` pass. */
const collect = async (
  path: string,
  apiKey: string,
  options: { headers?: Record<string, string>; until?: (e: Received) => boolean; ms?: number } = {}
) => {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), options.ms ?? 10_000)
  const response = await world.node.fetch(path, { apiKey, headers: options.headers ?? {}, signal: controller.signal })
  const events: Array<Received> = []
  const opened = { response, events, end: Promise.resolve<"ended" | "stopped" | "aborted">("aborted") }
  if (response.status !== 200) {
    clearTimeout(timer)
    return opened
  }
  opened.end = readEventStream(response, (e) => {
    const data = JSON.parse(e.data)
    decode(data)
    const received = { id: e.id, event: e.event, data }
    events.push(received)
    return options.until?.(received) ?? false
  }).catch(() => "aborted" as const).finally(() => clearTimeout(timer))
  return opened
}

const scripted = {
  provider: "scripted",
  script: [
    { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "7" } } }] },
    { text: "Rex" }
  ]
}

describe("event streams", () => {
  it("a task's stream carries its lifecycle in order and ends after its end; the organization's carries it too", async () => {
    const { apiKey, connection, node } = world
    const agent = await createAgent(node, apiKey, {
      name: "events",
      model: scripted,
      skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
    })
    const organization = await collect(`/v1/events?agent_id=${agent.id}`, apiKey, {
      until: (e) => e.event === "task.completed"
    })
    expect(organization.response.headers.get("content-type")).toContain("text/event-stream")
    expect(organization.response.headers.get("cache-control")).toBe("no-cache")
    expect(organization.response.headers.get("x-accel-buffering")).toBe("no")
    await new Promise((r) => setTimeout(r, 200))

    const accepted = await (await invokeAgent(node, apiKey, agent.id, "which pet?", { async: true })).json()
    const own = await collect(`/v1/tasks/${accepted.id}/events`, apiKey)
    expect(await own.end).toBe("ended")
    const types = own.events.map((e) => e.event)
    expect(types).toEqual([
      "task.created",
      "task.started",
      "task.model_call",
      "task.tool_call",
      "task.model_call",
      "task.completed"
    ])
    expect(own.events.every((e) => e.data.data.task_id === accepted.id)).toBe(true)
    expect(own.events.at(-1)!.data.data.result).toBe("Rex")
    const ids = own.events.map((e) => BigInt(e.id))
    ids.slice(1).forEach((id, i) => expect(id > ids[i]!).toBe(true))
    expect(own.events.map((e) => e.data.id)).toEqual(own.events.map((e) => e.id))

    expect(await organization.end).toBe("stopped")
    expect(organization.events.map((e) => e.event)).toEqual(types)

    // resuming after the second event gives the rest, and the stream ends again
    const resumed = await collect(`/v1/tasks/${accepted.id}/events`, apiKey, {
      headers: { "last-event-id": own.events[1]!.id }
    })
    expect(await resumed.end).toBe("ended")
    expect(resumed.events.map((e) => e.id)).toEqual(own.events.slice(2).map((e) => e.id))

    // resuming after its end (an EventSource reconnects when a stream ends): 204, which tells an EventSource to
    // stop reconnecting (HTML standard, server-sent events); a 200 that ends had it reconnect every 2 s for good
    const afterEnd = await world.node.fetch(`/v1/tasks/${accepted.id}/events`, {
      apiKey,
      headers: { "last-event-id": own.events.at(-1)!.id }
    })
    expect(afterEnd.status).toBe(204)
    expect(await afterEnd.text()).toBe("")

    // a task whose end is not in the log (ended before the log existed): what is kept, then 204 after it
    await db.query("DELETE FROM events WHERE id = $1", [own.events.at(-1)!.id])
    const kept = await collect(`/v1/tasks/${accepted.id}/events`, apiKey)
    expect(await kept.end).toBe("ended")
    expect(kept.events.map((e) => e.id)).toEqual(own.events.slice(0, -1).map((e) => e.id))
    const afterKept = await world.node.fetch(`/v1/tasks/${accepted.id}/events`, {
      apiKey,
      headers: { "last-event-id": kept.events.at(-1)!.id }
    })
    expect(afterKept.status).toBe(204)
    const beforeKept = await collect(`/v1/tasks/${accepted.id}/events`, apiKey, {
      headers: { "last-event-id": kept.events.at(-2)!.id }
    })
    expect(await beforeKept.end).toBe("ended")
    expect(beforeKept.events.map((e) => e.id)).toEqual([kept.events.at(-1)!.id])
  })

  it("another organization's stream never sees the events, and a task of another organization is not found", async () => {
    const { apiKey, node } = world
    const other = await node.bootstrap("Elsewhere")
    const theirs = await collect("/v1/events?last_event_id=0", other.api_key, { ms: 2500 })
    const agent = await createAgent(node, apiKey, {
      name: "isolated",
      model: { provider: "scripted", script: [{ text: "x" }] }
    })
    const accepted = await (await invokeAgent(node, apiKey, agent.id, "hi", { async: true })).json()
    await waitForTask(node, apiKey, accepted.id)
    await theirs.end
    const seenTaskIds = theirs.events.map((e) => e.data.data.task_id).filter((id) => id !== undefined)
    expect(seenTaskIds).not.toContain(accepted.id)
    expect(theirs.events.every((e) =>
      e.data.data.organization_id === undefined ||
      e.data.data.organization_id === other.organization_id
    )).toBe(true)
    const foreign = await world.node.fetch(`/v1/tasks/${accepted.id}/events`, { apiKey: other.api_key })
    expect(foreign.status).toBe(404)
    expect((await foreign.json()).error.code).toBe("not_found")
  })

  it("a key limited to an agent sees that agent's events only, and a Member no audit records", async () => {
    const { apiKey, node } = world
    const mine = await createAgent(node, apiKey, {
      name: "mine",
      model: { provider: "scripted", script: [{ text: "a" }] }
    })
    const theirs = await createAgent(node, apiKey, {
      name: "theirs",
      model: { provider: "scripted", script: [{ text: "b" }] }
    })
    const limited = await (await node.fetch("/v1/api-keys", {
      ...json({ name: "limited", kind: "organization", role: "member", agent_ids: [mine.id] }),
      apiKey
    })).json()
    const member = await addMember(node, apiKey, "member")
    const start = "0"
    const asLimited = await collect("/v1/events", limited.api_key, { headers: { "last-event-id": start }, ms: 3000 })
    const asMember = await collect("/v1/events", member.key, { headers: { "last-event-id": start }, ms: 3000 })
    const asAdmin = await collect("/v1/events?types=audit.recorded", apiKey, {
      headers: { "last-event-id": start },
      ms: 3000
    })
    for (const agent of [mine, theirs]) {
      const accepted = await (await invokeAgent(node, apiKey, agent.id, "hi", { async: true })).json()
      await waitForTask(node, apiKey, accepted.id)
    }
    await Promise.all([asLimited.end, asMember.end, asAdmin.end])
    const agentsSeen = (r: { events: Array<Received> }) => new Set(r.events.map((e) => e.data.data.agent_id))
    expect(agentsSeen(asLimited)).toEqual(new Set([mine.id]))
    expect(agentsSeen(asMember).has(theirs.id)).toBe(true)
    expect(asMember.events.some((e) => e.event === "audit.recorded")).toBe(false)
    expect(asLimited.events.some((e) => e.event === "audit.recorded")).toBe(false)
    // the Admin sees the audit records (the agents' creation, the key, the member), and only those
    expect(asAdmin.events.length).toBeGreaterThan(0)
    expect(asAdmin.events.every((e) => e.event === "audit.recorded")).toBe(true)
    expect(asAdmin.events.map((e) => e.data.data.action)).toContain("CREATE_AGENT")
  })

  it("streams with one filter share a read's events; another filter on the same key gets its own", async () => {
    const { apiKey, node } = world
    const one = await createAgent(node, apiKey, {
      name: "one",
      model: { provider: "scripted", script: [{ text: "a" }] }
    })
    const two = await createAgent(node, apiKey, {
      name: "two",
      model: { provider: "scripted", script: [{ text: "b" }] }
    })
    // each stream reads until it has what it should (3 tasks' created and completed of either agent, or of `one`)
    const until = (n: number) => {
      let seen = 0
      return (e: Received) => [one.id, two.id].includes(e.data.data.agent_id) && ++seen === n
    }
    const from = (n: number) => ({ headers: { "last-event-id": "0" }, until: until(n) })
    const first = await collect("/v1/events?types=task.created,task.completed", apiKey, from(6))
    const second = await collect("/v1/events?types=task.completed,task.created", apiKey, from(6))
    const onlyOne = await collect(`/v1/events?types=task.created,task.completed&agent_id=${one.id}`, apiKey, from(4))
    for (const agent of [one, two, one]) {
      const accepted = await (await invokeAgent(node, apiKey, agent.id, "hi", { async: true })).json()
      await waitForTask(node, apiKey, accepted.id)
    }
    await Promise.all([first.end, second.end, onlyOne.end])
    const ours = (r: { events: Array<Received> }) =>
      r.events.filter((e) => [one.id, two.id].includes(e.data.data.agent_id)).map((e) => `${e.id} ${e.event}`)
    expect(ours(first)).toHaveLength(6)
    expect(ours(second)).toEqual(ours(first))
    expect(ours(onlyOne)).toHaveLength(4)
    expect(onlyOne.events.every((e) => e.data.data.agent_id === one.id)).toBe(true)
  })

  it("types a key is never shown are refused with 403, not followed in silence", async () => {
    const { apiKey, node } = world
    const member = await addMember(node, apiKey, "member")
    const agent = await createAgent(node, apiKey, {
      name: "typed",
      model: { provider: "scripted", script: [{ text: "a" }] }
    })
    const limited = await (await node.fetch("/v1/api-keys", {
      ...json({ name: "limited-types", kind: "organization", role: "admin", agent_ids: [agent.id] }),
      apiKey
    })).json()
    const refused = [
      [member.key, "audit.recorded", "audit records are for Admins and above"],
      [member.key, "task.completed,audit.recorded", "audit records are for Admins and above"],
      [limited.api_key, "audit.recorded", "a key limited to agents sees only their task and approval events"],
      [limited.api_key, "connection.needs_reauthentication", "a key limited to agents"]
    ] as const
    for (const [key, types, why] of refused) {
      const response = await node.fetch(`/v1/events?types=${types}`, { apiKey: key })
      expect(response.status).toBe(403)
      const { error } = await response.json()
      expect(error.code).toBe("forbidden")
      expect(error.message).toContain(why)
    }
    // what they may see opens as before
    for (
      const [key, types] of [[member.key, "task.completed,connection.needs_reauthentication"], [
        apiKey,
        "audit.recorded"
      ], [limited.api_key, "task.completed"]] as const
    ) {
      const opened = await collect(`/v1/events?types=${types}`, key, { ms: 300 })
      expect(opened.response.status).toBe(200)
      await opened.end
    }
  })

  it("an agent_id the key cannot see is 404, not followed in silence; a deleted agent's stream still opens", async () => {
    const { apiKey, node } = world
    const other = await node.bootstrap("Agents elsewhere")
    const mine = await createAgent(node, apiKey, {
      name: "seen",
      model: { provider: "scripted", script: [{ text: "a" }] }
    })
    const another = await createAgent(node, apiKey, {
      name: "unseen",
      model: { provider: "scripted", script: [{ text: "b" }] }
    })
    const limited = await (await node.fetch("/v1/api-keys", {
      ...json({ name: "limited-agent", kind: "organization", role: "member", agent_ids: [mine.id] }),
      apiKey
    })).json()
    const refused = [
      [other.api_key, mine.id], // another organization's agent
      [apiKey, "00000000-0000-4000-8000-000000000000"], // no such agent
      [limited.api_key, another.id] // outside the key's agents
    ] as const
    for (const [key, agentId] of refused) {
      const response = await node.fetch(`/v1/events?agent_id=${agentId}`, { apiKey: key })
      expect(response.status).toBe(404)
      expect((await response.json()).error.code).toBe("not_found")
    }
    // types no agent's task has: as silent, refused
    const untyped = await node.fetch(`/v1/events?agent_id=${mine.id}&types=audit.recorded`, { apiKey })
    expect(untyped.status).toBe(400)
    expect((await untyped.json()).error.code).toBe("validation_failed")
    // what the key may see opens; so does a deleted agent's (its tasks' events are still in the log)
    expect((await node.fetch(`/v1/agents/${another.id}`, { method: "DELETE", apiKey })).status).toBe(204)
    for (const [key, agentId] of [[limited.api_key, mine.id], [apiKey, another.id]] as const) {
      const opened = await collect(`/v1/events?agent_id=${agentId}`, key, { ms: 300 })
      expect(opened.response.status).toBe(200)
      await opened.end
    }
  })

  it("a Last-Event-ID older than retention kept is refused with 410 events_expired, never a silent gap", async () => {
    const { apiKey, node, organizationId } = world
    const [row] = (await db.query<{ id: string }>(
      "SELECT max(id)::text AS id FROM events WHERE organization_id = $1",
      [organizationId]
    )).rows
    // as retention leaves it: the events up to this one pruned
    await db.query(
      `INSERT INTO event_horizons (organization_id, pruned_through) VALUES ($1, $2)
       ON CONFLICT (organization_id) DO UPDATE SET pruned_through = excluded.pruned_through`,
      [organizationId, row!.id]
    )
    const expired = await node.fetch("/v1/events", { apiKey, headers: { "last-event-id": "1" } })
    expect(expired.status).toBe(410)
    const body = await expired.json()
    expect(body.error.code).toBe("events_expired")
    expect(body.error.details.oldest_after).toBe(row!.id)
    expect(body.error.request_id).toEqual(expect.any(String))
    // from the oldest kept instead: fine
    const fresh = await collect("/v1/events", apiKey, { headers: { "last-event-id": "0" }, ms: 500 })
    expect(fresh.response.status).toBe(200)
    await fresh.end
    expect(fresh.events.every((e) => BigInt(e.id) > BigInt(row!.id))).toBe(true)
  })

  it("a Last-Event-ID that is not an event id is refused with 400 and the error envelope", async () => {
    const { apiKey, node } = world
    for (const bad of ["abc", "-1", "1.5", "99999999999999999999", "01"]) {
      const response = await node.fetch("/v1/events", { apiKey, headers: { "last-event-id": bad } })
      expect(response.status).toBe(400)
      const body = await response.json()
      expect(body.error.code).toBe("invalid_last_event_id")
      expect(body.error.request_id).toEqual(expect.any(String))
    }
    // an empty one is none (an SSE id of "" is a reset): the stream opens, and the query's position is read
    const empty = await collect("/v1/events", apiKey, { headers: { "last-event-id": "" }, ms: 500 })
    expect(empty.response.status).toBe(200)
    await empty.end
    const queried = await node.fetch("/v1/events?last_event_id=abc", { apiKey, headers: { "last-event-id": "" } })
    expect(queried.status).toBe(400)
    expect((await queried.json()).error.code).toBe("invalid_last_event_id")
    // well-formed but past every event committed: following it would skip everything until the log caught up
    const ahead = "9007199254740993"
    const agent = await createAgent(node, apiKey, { name: "ahead", model: scripted })
    const task = await (await invokeAgent(node, apiKey, agent.id, "hi", { async: true })).json()
    for (const path of ["/v1/events", `/v1/tasks/${task.id}/events`]) {
      const response = await node.fetch(path, { apiKey, headers: { "last-event-id": ahead } })
      expect(response.status).toBe(400)
      const body = await response.json()
      expect(body.error.code).toBe("invalid_last_event_id")
      expect(body.error.message).toContain("past every event")
    }
    const unknownType = await node.fetch("/v1/events?types=task.created,task.exploded", { apiKey })
    expect(unknownType.status).toBe(400)
    // the issue shape of every validation_failed: `path` a dotted string, the message led by it
    const { error } = await unknownType.json()
    expect(error.code).toBe("validation_failed")
    expect(error.details.issues).toEqual([
      {
        path: "types",
        message: expect.stringMatching(/^unknown event type\(s\) task\.exploded; known: .*task\.created/)
      }
    ])
    expect(error.message).toBe(`\`types\`: ${error.details.issues[0].message}`)
    const unauthenticated = await node.fetch("/v1/events")
    expect(unauthenticated.status).toBe(401)
  })
})
