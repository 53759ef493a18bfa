import * as Crypto from "node:crypto"
import * as Http from "node:http"
import type { Duplex } from "node:stream"
import { StringDecoder } from "node:string_decoder"
import type { TaskId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import type { ErrorFields } from "./ErrorEnvelope.js"

/**
 * Long polls handed between the nodes of a cluster (issue 20): a `?wait=` of a task another node runs is
 * sent, as one line, over a connection this node keeps to that node, and the running node answers it, as
 * one line, when the task ends. An HTTP request per poll cost both nodes a request's parsing, routing and
 * framing (about 2 ms of CPU per poll at 0.2 CPU); a line costs a JSON parse and a write.
 *
 * The connection is an HTTP upgrade on the node's own listener (`GET /internal/waits`, `Upgrade:
 * switchyard-waits`), opened only with a token derived from the cluster's secret key: the asking node has
 * authenticated the caller, and the running node answers as that principal. A line each way:
 * - asked: `{"n":1,"id":"<task>","ms":30000,"p":<principal>,"r":"<request id>"}`, or `{"n":1,"c":1}` (the
 *   caller went away);
 * - answered: `<n>\t<status>\tt\t<task JSON>` or `<n>\t<status>\te\t{"error":…,"headers":…}`.
 * A connection that fails or closes leaves its polls to the asking node, which answers them the ordinary way.
 */
export const WAIT_CHANNEL_PATH = "/internal/waits"
const PROTOCOL = "switchyard-waits"
const TOKEN_HEADER = "x-switchyard-cluster"

/** The token a node shows to open a channel: the same on every node that shares the secret key. */
export const channelToken = (secretKey: Uint8Array) =>
  Buffer.from(Crypto.hkdfSync("sha256", secretKey, Buffer.alloc(0), "switchyard wait channel v1", 32)).toString(
    "base64url"
  )

/** What the running node answered: a task's JSON, or one of our errors. */
export type WaitAnswer =
  | { readonly kind: "task"; readonly status: number; readonly json: string }
  | {
    readonly kind: "error"
    readonly status: number
    readonly error: ErrorFields
    readonly headers?: Readonly<Record<string, string>>
  }

/** Splits a stream of text into lines, calling `f` for each whole one. */
const lines = (socket: Duplex, f: (line: string) => void) => {
  let rest = ""
  // a decoder, not setEncoding (which an HTTP server's socket refuses), keeps a character split over chunks whole
  const decoder = new StringDecoder("utf8")
  socket.on("data", (chunk: Buffer) => {
    let text = rest + decoder.write(chunk)
    let at = text.indexOf("\n")
    while (at >= 0) {
      if (at > 0) f(text.slice(0, at))
      text = text.slice(at + 1)
      at = text.indexOf("\n")
    }
    rest = text
  })
}

interface Pending {
  readonly answered: (answer: WaitAnswer) => void
  readonly lost: () => void
}

/** One node's connection to another: opened on the first poll, opened again after it closes. */
class Peer {
  private socket: Duplex | undefined
  private queued: Array<string> = []
  private readonly pending = new Map<number, Pending>()
  private next = 1
  closed = false

  constructor(url: URL, token: string, onClosed: () => void) {
    const request = Http.request({
      host: url.hostname,
      port: url.port === "" ? 80 : Number(url.port),
      path: WAIT_CHANNEL_PATH,
      headers: { connection: "Upgrade", upgrade: PROTOCOL, [TOKEN_HEADER]: token },
      timeout: 1_000
    })
    const close = () => {
      if (this.closed) return
      this.closed = true
      this.socket?.destroy()
      onClosed()
      const lost = [...this.pending.values()]
      this.pending.clear()
      this.queued = []
      for (const p of lost) p.lost()
    }
    request.once("upgrade", (_res, socket) => {
      // the connect timeout is not the channel's: it stays open while idle
      request.setTimeout(0)
      socket.setTimeout(0)
      socket.setNoDelay?.(true)
      this.socket = socket
      socket.on("error", close)
      socket.on("close", close)
      lines(socket, (line) => this.answer(line))
      if (this.queued.length > 0) socket.write(this.queued.join(""))
      this.queued = []
    })
    request.once("response", (res) => {
      res.resume()
      close()
    })
    request.once("timeout", () => request.destroy())
    request.once("error", close)
    request.once("close", () => {
      if (this.socket === undefined) close()
    })
    request.end()
  }

  private write(line: string) {
    if (this.socket === undefined) this.queued.push(line)
    else this.socket.write(line)
  }

  private answer(line: string) {
    const a = line.indexOf("\t")
    const b = line.indexOf("\t", a + 1)
    const n = Number(line.slice(0, a))
    const pending = this.pending.get(n)
    if (pending === undefined) return
    this.pending.delete(n)
    const status = Number(line.slice(a + 1, b))
    const payload = line.slice(b + 3)
    if (line[b + 1] === "t") return pending.answered({ kind: "task", status, json: payload })
    const { error, headers } = JSON.parse(payload) as { error: ErrorFields; headers?: Record<string, string> }
    pending.answered({ kind: "error", status, error, ...(headers === undefined ? {} : { headers }) })
  }

  ask(principal: Principal, id: TaskId, waitMs: number, requestId: string, pending: Pending): () => void {
    const n = this.next++
    this.pending.set(n, pending)
    this.write(JSON.stringify({ n, id, ms: waitMs, p: principal, r: requestId }) + "\n")
    return () => {
      if (this.pending.delete(n) && !this.closed) this.write(`{"n":${n},"c":1}\n`)
    }
  }
}

/**
 * The asking side: `ask` sends a poll to the node at `owner` (an address from the shard directory, never
 * from a request); `lost` is called instead of `answered` when that node cannot be reached or goes away.
 * The answer cancels the poll (the caller went away).
 */
export const makeWaitClient = (token: string) => {
  const peers = new Map<string, Peer>()
  const peerOf = (owner: string) => {
    let peer = peers.get(owner)
    if (peer === undefined || peer.closed) {
      const created: Peer = new Peer(new URL(owner), token, () => {
        if (peers.get(owner) === created) peers.delete(owner)
      })
      peer = created
      peers.set(owner, peer)
    }
    return peer
  }
  return {
    ask: (
      owner: string,
      principal: Principal,
      id: TaskId,
      waitMs: number,
      requestId: string,
      answered: (answer: WaitAnswer) => void,
      lost: () => void
    ) => peerOf(owner).ask(principal, id, waitMs, requestId, { answered, lost })
  }
}

/** A poll the running node received: answer it with `reply`, once; `onCancel` is called if the asker gives up. */
export interface ReceivedWait {
  readonly principal: Principal
  readonly id: TaskId
  readonly waitMs: number
  readonly requestId: string
  readonly reply: (answer: WaitAnswer) => void
  /** Set by the receiver: how to stop waiting when the asker gives up. */
  onCancel?: () => void
}

/**
 * The running side: takes an upgrade request to the channel's path that shows the token (false: not one,
 * for the application to answer). `receive` answers each poll. `draining`: refuse new channels; open ones
 * are closed by `closeAll` when the node stops, which leaves their polls to the asking nodes.
 */
export const makeWaitServer = (
  token: string,
  draining: () => boolean,
  receive: (wait: ReceivedWait) => void
) => {
  const expected = Buffer.from(token)
  const open = new Set<Duplex>()
  const refuse = (socket: Duplex, status: string) => {
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`)
  }
  const take = (req: Http.IncomingMessage, socket: Duplex): boolean => {
    if (req.url !== WAIT_CHANNEL_PATH || req.headers["upgrade"] !== PROTOCOL) return false
    const shown = Buffer.from(String(req.headers[TOKEN_HEADER] ?? ""))
    if (shown.length !== expected.length || !Crypto.timingSafeEqual(shown, expected)) {
      refuse(socket, "403 Forbidden")
      return true
    }
    if (draining()) {
      refuse(socket, "503 Service Unavailable")
      return true
    }
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nupgrade: ${PROTOCOL}\r\nconnection: Upgrade\r\n\r\n`)
    ;(socket as Duplex & { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true)
    open.add(socket)
    const waits = new Map<number, ReceivedWait>()
    socket.on("error", () => socket.destroy())
    socket.on("close", () => {
      open.delete(socket)
      for (const wait of waits.values()) wait.onCancel?.()
      waits.clear()
    })
    lines(socket, (line) => {
      let asked: { n: number; id?: TaskId; ms?: number; p?: Principal; r?: string; c?: 1 }
      try {
        asked = JSON.parse(line)
      } catch {
        return void socket.destroy()
      }
      const { n } = asked
      if (asked.c === 1) {
        const wait = waits.get(n)
        waits.delete(n)
        return void wait?.onCancel?.()
      }
      const wait: ReceivedWait = {
        principal: asked.p!,
        id: asked.id!,
        waitMs: asked.ms ?? 0,
        requestId: asked.r ?? "",
        reply: (answer) => {
          if (!waits.delete(n) || socket.destroyed) return
          socket.write(
            answer.kind === "task"
              ? `${n}\t${answer.status}\tt\t${answer.json}\n`
              : `${n}\t${answer.status}\te\t${
                JSON.stringify({ error: answer.error, ...(answer.headers ? { headers: answer.headers } : {}) })
              }\n`
          )
        }
      }
      waits.set(n, wait)
      receive(wait)
    })
    return true
  }
  return {
    take,
    closeAll: () => {
      for (const socket of open) socket.destroy()
    }
  }
}
