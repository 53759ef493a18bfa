import { ConfigProvider, Effect, Exit, Layer, Logger, LogLevel, Option, Stream } from "effect"
import * as Http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { FileId } from "../../schema/Files.js"
import { SwitchyardConfig } from "../../src/config/SwitchyardConfig.js"
import { DatabaseForCommandLive } from "../../src/db/Database.js"
import { FileStore } from "../../src/files/FileStore.js"
import { CHUNK_BYTES, PgFileStoreLive } from "../../src/files/PgFileStore.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { patterned, uploaded } from "./support.js"

let node: TestNode
let admin: string
beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_MAX_FILE_BYTES: String(32 * 1024 * 1024) })
  admin = (await node.bootstrap()).api_key
})
afterAll(() => node?.stop())

/**
 * Downloads a file, pausing after its first bytes to run `meanwhile` (the server is then held back by the
 * client, far from the file's end), and tells how the body ended.
 */
const downloadAround = (fileId: string, meanwhile: () => Promise<void>) =>
  new Promise<{ ended: "whole" | "cut"; received: number; length: number }>((resolve, reject) => {
    const url = new URL(`/v1/files/${fileId}/content`, node.baseUrl)
    Http.get(url, { headers: { "x-api-key": admin } }, (res) => {
      let received = 0
      const length = Number(res.headers["content-length"])
      res.once("data", (first: Buffer) => {
        received += first.length
        res.pause()
        meanwhile().then(() => {
          res.on("data", (more: Buffer) => (received += more.length))
          res.once("end", () => resolve({ ended: received === length ? "whole" : "cut", received, length }))
          // a body cut short of its Content-Length: the connection is closed
          res.once("error", () => resolve({ ended: "cut", received, length }))
          res.resume()
        }, reject)
      })
    }).on("error", reject)
  })

describe("a file deleted or replaced while it is downloaded", () => {
  it("a download cut off by the file's deletion closes the connection rather than hanging", async () => {
    const bytes = patterned(24 * 1024 * 1024)
    const file = await uploaded(node, admin, "big/deleted.bin", bytes)
    const outcome = await downloadAround(file.id, async () => {
      const deleted = await node.fetch(`/v1/files/${file.id}`, { method: "DELETE", apiKey: admin })
      expect(deleted.status).toBe(204)
    })
    expect(outcome.length).toBe(bytes.length)
    expect(outcome.ended).toBe("cut")
    expect(outcome.received).toBeLessThan(bytes.length)
    // the node still answers, and the file is gone
    expect((await node.fetch(`/v1/files/${file.id}/content`, { apiKey: admin })).status).toBe(404)
  })

  it("so does one cut off by an upload that replaces the file", async () => {
    const file = await uploaded(node, admin, "big/replaced.bin", patterned(24 * 1024 * 1024, 3))
    const outcome = await downloadAround(file.id, async () => {
      await uploaded(node, admin, "big/replaced.bin", "new", "&overwrite=true")
    })
    expect(outcome.ended).toBe("cut")
    const listed = await (await node.fetch(`/v1/files?prefix=big/replaced`, { apiKey: admin })).json()
    expect(listed.items.map((f: { size: number }) => f.size)).toEqual([3])
  })

  it("a reader of content deleted under it fails with ContentGone, not a defect (agents' read_file: not_found)", async () => {
    const file = await uploaded(node, admin, "big/read.bin", patterned(6 * CHUNK_BYTES, 5))
    const exit = await Effect.runPromiseExit(
      Effect.gen(function*() {
        const store = yield* FileStore
        const pull = yield* Stream.toPull(store.read(file.id as FileId, 0, 6 * CHUNK_BYTES - 1))
        yield* pull
        yield* Effect.promise(() => node.fetch(`/v1/files/${file.id}`, { method: "DELETE", apiKey: admin }))
        // the chunks read ahead may still come; one after them is gone (the stream's end would fail with None)
        for (let i = 1; i < 6; i++) yield* pull
      }).pipe(
        Effect.scoped,
        Effect.mapError(Option.getOrUndefined),
        Effect.provide(
          PgFileStoreLive.pipe(Layer.provide(DatabaseForCommandLive), Layer.provide(SwitchyardConfig.layer))
        ),
        Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["DATABASE_URL", node.databaseUrl]])))
      )
    )
    expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : exit).toMatchObject({
      _tag: "ContentGone",
      fileId: file.id
    })
  })
})
