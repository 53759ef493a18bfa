import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type { Duplex } from "node:stream"
import { afterEach, describe, expect, it } from "vitest"
import type { TaskId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { channelToken, makeWaitClient, makeWaitServer, type ReceivedWait } from "../../src/http/WaitChannel.js"

/**
 * The wait channel between nodes (src/http/WaitChannel.ts) over a real listener on 127.0.0.1: polls asked
 * and answered as lines, the token checked, a cancelled poll withdrawn at the running side, and a
 * connection that goes away handing its polls back to the asking side.
 */
const token = channelToken(new Uint8Array(32).fill(7))
const principal = {
  organizationId: "0190a000-0000-7000-8000-000000000001",
  userId: null,
  keyId: "k1",
  role: "admin",
  agentIds: null
} as unknown as Principal
const taskId = (n: number) => `0190a000-0000-7000-8000-${String(n).padStart(12, "0")}` as TaskId

const servers: Array<Http.Server> = []
const channels: Array<{ closeAll: () => void }> = []
afterEach(async () => {
  // an upgraded connection is no longer the HTTP server's: it holds `close` until it is closed itself
  for (const channel of channels.splice(0)) channel.closeAll()
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  }
})

/** A listener whose upgrades go to a wait server answering with `receive`. */
const listen = async (receive: (wait: ReceivedWait) => void, draining = () => false) => {
  const channel = makeWaitServer(token, draining, receive)
  channels.push(channel)
  const server = Http.createServer((_req, res) => res.writeHead(404).end())
  server.on("upgrade", (req, socket: Duplex) => {
    if (!channel.take(req, socket)) socket.destroy()
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  servers.push(server)
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, channel }
}

const ask = (client: ReturnType<typeof makeWaitClient>, url: string, id: TaskId, waitMs = 5_000) =>
  new Promise<{ answered?: unknown; lost?: true }>((resolve) => {
    client.ask(
      url,
      principal,
      id,
      waitMs,
      "req-1",
      (answer) => resolve({ answered: answer }),
      () => resolve({ lost: true })
    )
  })

describe("the wait channel", () => {
  it("answers many polls on one connection, each with its own answer, text with any characters intact", async () => {
    const received: Array<ReceivedWait> = []
    const { url } = await listen((wait) => {
      received.push(wait)
      // answered later and out of order, with characters that span several bytes
      setTimeout(
        () => wait.reply({ kind: "task", status: 200, json: JSON.stringify({ id: wait.id, text: "🦜 ü\tend" }) }),
        Number(wait.id.slice(-2)) % 3 * 5
      )
    })
    const client = makeWaitClient(token)
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => ask(client, url, taskId(i))))
    answers.forEach((a, i) =>
      expect(a.answered).toEqual({
        kind: "task",
        status: 200,
        json: JSON.stringify({ id: taskId(i), text: "🦜 ü\tend" })
      })
    )
    expect(received.map((w) => w.principal)).toEqual(Array(40).fill(principal))
    expect(received[0]!.waitMs).toBe(5_000)
    expect(received[0]!.requestId).toBe("req-1")
  })

  it("keeps one connection open while idle, past the connect timeout", async () => {
    const { url } = await listen((wait) => wait.reply({ kind: "task", status: 200, json: "{}" }))
    let upgrades = 0
    servers.at(-1)!.prependListener("upgrade", () => void upgrades++)
    const client = makeWaitClient(token)
    expect(await ask(client, url, taskId(1))).toEqual({ answered: { kind: "task", status: 200, json: "{}" } })
    await new Promise((r) => setTimeout(r, 1_500))
    expect(await ask(client, url, taskId(2))).toEqual({ answered: { kind: "task", status: 200, json: "{}" } })
    expect(upgrades).toBe(1)
  })

  it("carries an error answer with its headers", async () => {
    const { url } = await listen((wait) =>
      wait.reply({
        kind: "error",
        status: 404,
        error: { code: "not_found", message: "Task not found." } as never,
        headers: { "x-a": "1" }
      })
    )
    const answer = await ask(makeWaitClient(token), url, taskId(1))
    expect(answer.answered).toEqual({
      kind: "error",
      status: 404,
      error: { code: "not_found", message: "Task not found." },
      headers: { "x-a": "1" }
    })
  })

  it("withdraws a poll its asker cancelled", async () => {
    let cancelled = 0
    let arrived: () => void
    const received = new Promise<void>((r) => (arrived = r))
    const { url } = await listen((wait) => {
      wait.onCancel = () => void cancelled++
      arrived()
    })
    const cancel = makeWaitClient(token).ask(url, principal, taskId(1), 5_000, "r", () => {}, () => {})
    await received
    cancel()
    await expect.poll(() => cancelled).toBe(1)
  })

  it("refuses a node without the token, and hands the polls back to the asker", async () => {
    let reached = 0
    const { url } = await listen(() => void reached++)
    expect(await ask(makeWaitClient("not-the-token"), url, taskId(1))).toEqual({ lost: true })
    expect(reached).toBe(0)
  })

  it("hands back the polls of a node that cannot be reached, or that closes the connection", async () => {
    const closed = await listen(() => {})
    const address = closed.url
    servers.pop()!.close()
    expect(await ask(makeWaitClient(token), address, taskId(1))).toEqual({ lost: true })

    const { url, channel } = await listen(() => {})
    const client = makeWaitClient(token)
    const pending = ask(client, url, taskId(2))
    await new Promise((r) => setTimeout(r, 100))
    channel.closeAll()
    expect(await pending).toEqual({ lost: true })
    // the next poll opens a new connection
    const again = await listen((wait) => wait.reply({ kind: "task", status: 200, json: "{}" }))
    expect(await ask(client, again.url, taskId(3))).toEqual({ answered: { kind: "task", status: 200, json: "{}" } })
  })

  it("refuses new connections while the node drains", async () => {
    let reached = 0
    const { url } = await listen(() => void reached++, () => true)
    expect(await ask(makeWaitClient(token), url, taskId(1))).toEqual({ lost: true })
    expect(reached).toBe(0)
  })
})
