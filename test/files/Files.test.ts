import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call, expectError, withDatabase } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { patterned, sha256, uploaded, uploadRaw } from "./support.js"

let node: TestNode
let admin: string
let organizationId: string
beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_MAX_FILE_BYTES: String(3 * 1024 * 1024) })
  const org = await node.bootstrap()
  admin = org.api_key
  organizationId = org.organization_id
})
afterAll(() => node?.stop())

const multipart = (parts: Array<{ name: string; value: string | Uint8Array; filename?: string; type?: string }>) => {
  const form = new FormData()
  for (const p of parts) {
    if (p.filename === undefined) form.append(p.name, p.value as string)
    else {form.append(
        p.name,
        new Blob([p.value as BlobPart], { type: p.type ?? "application/octet-stream" }),
        p.filename
      )}
  }
  return form
}

const download = async (fileId: string, headers: Record<string, string> = {}, apiKey = admin) => {
  const response = await node.fetch(`/v1/files/${fileId}/content`, { apiKey, headers })
  return { response, bytes: Buffer.from(await response.arrayBuffer()) }
}

describe("uploading and downloading workspace files", () => {
  it("a raw upload is stored in chunks and comes back whole, with its metadata", async () => {
    const bytes = patterned(2.5 * 1024 * 1024)
    const response = await uploadRaw(node, admin, "?name=data/blob.bin", bytes)
    const file = await response.json()
    expect(response.status, JSON.stringify(file)).toBe(201)
    expect(file).toMatchObject({
      name: "data/blob.bin",
      size: bytes.length,
      sha256: sha256(bytes),
      content_type: "application/octet-stream",
      scope: "organization",
      agent_id: null,
      owner: { type: "user" }
    })
    expect((await call(node, admin, "GET", `/v1/files/${file.id}`)).body).toEqual(file)
    const { bytes: back, response: got } = await download(file.id)
    expect(got.status).toBe(200)
    expect(got.headers.get("etag")).toBe(`"${sha256(bytes)}"`)
    expect(got.headers.get("content-length")).toBe(String(bytes.length))
    expect(got.headers.get("accept-ranges")).toBe("bytes")
    expect(got.headers.get("content-type")).toBe("application/octet-stream")
    expect(got.headers.get("content-disposition")).toBe(`attachment; filename="blob.bin"; filename*=UTF-8''blob.bin`)
    expect(got.headers.get("x-content-type-options")).toBe("nosniff")
    expect(back.equals(bytes)).toBe(true)
    const chunks = await withDatabase(
      node,
      async (db) =>
        (await db.query(
          "SELECT start::int AS start, octet_length(data) AS length FROM file_chunks WHERE file_id = $1 ORDER BY start",
          [file.id]
        )).rows
    )
    expect(chunks).toEqual([
      { start: 0, length: 1048576 },
      { start: 1048576, length: 1048576 },
      { start: 2097152, length: 524288 }
    ])
  })

  it("a raw JSON body is a file like any other: stored as sent, never read as the API's JSON", async () => {
    const text = "[".repeat(200) + "not json at all"
    const response = await uploadRaw(node, admin, "?name=weird.json", text, "application/json")
    const file = await response.json()
    expect(response.status, JSON.stringify(file)).toBe(201)
    expect(file.content_type).toBe("application/json")
    const { bytes, response: got } = await download(file.id)
    expect(got.headers.get("content-type")).toBe("application/json")
    expect(bytes.toString("utf8")).toBe(text)
  })

  it("an empty file has size 0 and the SHA-256 of nothing", async () => {
    const file = await uploaded(node, admin, "empty.txt", "")
    expect(file).toMatchObject({ size: 0, sha256: sha256(Buffer.alloc(0)) })
    const { bytes, response } = await download(file.id)
    expect(response.status).toBe(200)
    expect(bytes.length).toBe(0)
    const r = await node.fetch(`/v1/files/${file.id}/content`, { apiKey: admin, headers: { range: "bytes=0-0" } })
    const body = await r.json()
    expectError({ status: r.status, headers: r.headers, body }, 416, "range_not_satisfiable")
    expect(r.headers.get("content-range")).toBe("bytes */0")
    // no "ask for bytes 0 to -1": a range of an empty file cannot be asked for at all
    expect(body.error.message).not.toContain("-1")
    expect(body.error.message).toContain("without a Range header")
  })

  it("a multipart upload: fields first, then one file part, whose type and filename are kept", async () => {
    const bytes = patterned(1.5 * 1024 * 1024, 7)
    const response = await node.fetch("/v1/files", {
      method: "POST",
      apiKey: admin,
      body: multipart([{ name: "file", value: bytes, filename: "photo.raw", type: "image/x-raw" }])
    })
    const file = await response.json()
    expect(response.status, JSON.stringify(file)).toBe(201)
    expect(file).toMatchObject({
      name: "photo.raw",
      size: bytes.length,
      sha256: sha256(bytes),
      content_type: "image/x-raw"
    })
    expect((await download(file.id)).bytes.equals(bytes)).toBe(true)

    // a JSON file part is a file too, and `name` comes from the field
    const named = await node.fetch("/v1/files", {
      method: "POST",
      apiKey: admin,
      body: multipart([
        { name: "name", value: "configs/app.json" },
        { name: "file", value: "{\"a\":1}", filename: "x.json", type: "application/json" }
      ])
    })
    expect(await named.json()).toMatchObject({ name: "configs/app.json", content_type: "application/json", size: 7 })
    // and the query wins over the field
    const queried = await node.fetch("/v1/files?name=from-query.txt", {
      method: "POST",
      apiKey: admin,
      body: multipart([{ name: "name", value: "from-field.txt" }, { name: "file", value: "x", filename: "f.txt" }])
    })
    expect((await queried.json()).name).toBe("from-query.txt")
  })

  it("a multipart body without exactly one file, with fields after it or a field twice, is refused and leaves nothing", async () => {
    const cases = [
      multipart([{ name: "name", value: "none.txt" }]),
      multipart([
        { name: "file", value: "one", filename: "two-files.txt" },
        { name: "other", value: "two", filename: "b.txt" }
      ]),
      multipart([{ name: "file", value: "one", filename: "late-field.txt" }, { name: "name", value: "late" }]),
      multipart([{ name: "colour", value: "blue" }, { name: "file", value: "one", filename: "unknown-field.txt" }]),
      // a field twice: which one was meant is not ours to guess
      multipart([
        { name: "name", value: "first.txt" },
        { name: "name", value: "second.txt" },
        { name: "file", value: "one", filename: "twice.txt" }
      ])
    ]
    for (const body of cases) {
      const r = await node.fetch("/v1/files", { method: "POST", apiKey: admin, body })
      const parsed = { status: r.status, headers: r.headers, body: await r.json() }
      expectError(parsed, 400, "invalid_multipart")
    }
    const garbled = await node.fetch("/v1/files?name=g.txt", {
      method: "POST",
      apiKey: admin,
      headers: { "content-type": "multipart/form-data; boundary=xyz" },
      body: "this is not multipart"
    })
    expectError(
      { status: garbled.status, headers: garbled.headers, body: await garbled.json() },
      400,
      "invalid_multipart"
    )
    const names = (await call(node, admin, "GET", "/v1/files?limit=200")).body.items.map((f: any) => f.name)
    for (const name of ["none.txt", "two-files.txt", "late-field.txt", "unknown-field.txt", "late", "g.txt"]) {
      expect(names).not.toContain(name)
    }
    const uploading = await withDatabase(
      node,
      async (db) => (await db.query("SELECT count(*)::int AS n FROM files WHERE status = 'uploading'")).rows[0].n
    )
    expect(uploading).toBe(0)
  })
})

describe("a multipart body that is cut short or malformed is refused, never left hanging", () => {
  const asJson = async (r: Response) => ({ status: r.status, headers: r.headers, body: await r.json() })
  /** A raw multipart body; the signal fails the test fast if the node never answers. */
  const sendMultipart = (body: string, contentType: string, query = "") =>
    node.fetch(`/v1/files${query}`, {
      method: "POST",
      apiKey: admin,
      headers: { "content-type": contentType },
      body,
      signal: AbortSignal.timeout(10_000)
    }).then(asJson)
  const uploading = () =>
    withDatabase(node, async (db) => ({
      files: (await db.query("SELECT count(*)::int AS n FROM files WHERE status <> 'ready'")).rows[0].n,
      chunks: (await db.query(
        "SELECT count(*)::int AS n FROM file_chunks c WHERE NOT EXISTS " +
          "(SELECT 1 FROM files f WHERE f.id = c.file_id AND f.status = 'ready')"
      )).rows[0].n
    }))

  it("a file part the body ends inside is 400 invalid_multipart as soon as the body ends, and nothing is kept", async () => {
    const head = "--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"open.txt\"\r\n\r\n"
    for (const rest of ["hello", "", "hello\r\n--XY", patterned(1024 * 1024 + 5).toString("latin1")]) {
      const r = await sendMultipart(head + rest, "multipart/form-data; boundary=XYZ", "?name=open.txt")
      expectError(r, 400, "invalid_multipart")
      expect(r.body.error.message).toContain("ended")
    }
    // a field part left open, and a body cut off in a part's headers
    for (const body of ["--XYZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx", "--XYZ\r\nContent-Dis"]) {
      expectError(await sendMultipart(body, "multipart/form-data; boundary=XYZ"), 400, "invalid_multipart")
    }
    expect((await call(node, admin, "GET", "/v1/files?prefix=open")).body.items).toEqual([])
    expect(await uploading()).toEqual({ files: 0, chunks: 0 })
  })

  it("a multipart Content-Type without a boundary is 400 invalid_multipart, saying so", async () => {
    for (
      const type of ["multipart/form-data", "multipart/form-data; charset=utf-8", "multipart/form-data; boundary="]
    ) {
      const r = await sendMultipart("abc", type, "?name=no-boundary.txt")
      expectError(r, 400, "invalid_multipart")
      expect(r.body.error.message).toContain("boundary")
    }
  })

  it("part headers that are too large, or too many parts, are 400 invalid_multipart", async () => {
    const huge = `--XYZ\r\nContent-Disposition: form-data; name="file"; filename="h.txt"\r\nX-Pad: ${
      "a".repeat(64 * 1024)
    }\r\n\r\nx\r\n--XYZ--\r\n`
    const tooLarge = await sendMultipart(huge, "multipart/form-data; boundary=XYZ")
    expectError(tooLarge, 400, "invalid_multipart")
    expect(tooLarge.body.error.message).toContain("header")
    const field = "--XYZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nmany.txt\r\n"
    const many = await sendMultipart(`${field.repeat(12)}--XYZ--\r\n`, "multipart/form-data; boundary=XYZ")
    expectError(many, 400, "invalid_multipart")
    expect(await uploading()).toEqual({ files: 0, chunks: 0 })
  })
})

describe("reading a file by Range, ETag and If-None-Match", () => {
  const bytes = patterned(2 * 1024 * 1024 + 100, 3)
  let file: any
  beforeAll(async () => {
    file = await uploaded(node, admin, "ranges.bin", bytes)
  })

  it("one range gives 206 with Content-Range, also across chunk rows, open-ended and as a suffix", async () => {
    const size = bytes.length
    const cases: Array<[string, number, number]> = [
      ["bytes=0-99", 0, 99],
      ["bytes=1048570-1048600", 1048570, 1048600],
      ["bytes=1000-", 1000, size - 1],
      ["bytes=-500", size - 500, size - 1],
      ["bytes=-99999999", 0, size - 1],
      ["bytes=2097000-99999999", 2097000, size - 1],
      // an end past any number a file could reach is clamped too, not refused
      ["bytes=0-99999999999999999999999", 0, size - 1],
      ["bytes=-99999999999999999999999", 0, size - 1],
      [" bytes = 5 - 5 ", 5, 5]
    ]
    for (const [range, start, end] of cases) {
      const { bytes: got, response } = await download(file.id, { range })
      expect({ range, status: response.status }).toEqual({ range, status: 206 })
      expect(response.headers.get("content-range")).toBe(`bytes ${start}-${end}/${size}`)
      expect(response.headers.get("content-length")).toBe(String(end - start + 1))
      expect(got.equals(bytes.subarray(start, end + 1)), range).toBe(true)
    }
  })

  it("a range past the end is 416 with Content-Range: bytes */size, in the error envelope", async () => {
    for (
      const range of [
        `bytes=${bytes.length}-`,
        `bytes=${bytes.length + 10}-${bytes.length + 20}`,
        "bytes=-0",
        "bytes=99999999999999999999999-"
      ]
    ) {
      const r = await node.fetch(`/v1/files/${file.id}/content`, { apiKey: admin, headers: { range } })
      expectError({ status: r.status, headers: r.headers, body: await r.json() }, 416, "range_not_satisfiable")
      expect(r.headers.get("content-range")).toBe(`bytes */${bytes.length}`)
    }
  })

  it("a malformed range, another unit or several ranges are 400 invalid_range", async () => {
    for (const range of ["bytes=5-1", "items=0-1", "bytes=0-1,5-6", "bytes=abc", "bytes=-", "bytes=1-2-3", "0-1"]) {
      const r = await node.fetch(`/v1/files/${file.id}/content`, { apiKey: admin, headers: { range } })
      const body = await r.json()
      expect({ range, status: r.status, code: body.error.code }).toEqual({ range, status: 400, code: "invalid_range" })
      expect(body.error.request_id).toBe(r.headers.get("x-request-id"))
    }
  })

  it("If-None-Match with the ETag is 304 without a body; If-Range with another tag gets the whole file", async () => {
    const etag = `"${file.sha256}"`
    for (const value of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const { bytes: got, response } = await download(file.id, { "if-none-match": value })
      expect({ value, status: response.status, length: got.length }).toEqual({ value, status: 304, length: 0 })
      expect(response.headers.get("etag")).toBe(etag)
    }
    expect((await download(file.id, { "if-none-match": "\"other\"" })).response.status).toBe(200)
    const matching = await download(file.id, { range: "bytes=0-9", "if-range": etag })
    expect(matching.response.status).toBe(206)
    const stale = await download(file.id, { range: "bytes=0-9", "if-range": "\"stale\"" })
    expect(stale.response.status).toBe(200)
    expect(stale.bytes.length).toBe(bytes.length)
  })
})

describe("listing, replacing and deleting", () => {
  it("lists by prefix in name order with a cursor; a prefix's _ and % are literal", async () => {
    const org = await node.bootstrap()
    for (const name of ["a/2.txt", "a/1.txt", "a/3.txt", "ab.txt", "a_x.txt", "b/1.txt"]) {
      await uploaded(node, org.api_key, name, name)
    }
    const first = (await call(node, org.api_key, "GET", "/v1/files?prefix=a/&limit=2")).body
    expect(first.items.map((f: any) => f.name)).toEqual(["a/1.txt", "a/2.txt"])
    expect(typeof first.next_cursor).toBe("string")
    const second =
      (await call(node, org.api_key, "GET", `/v1/files?prefix=a/&limit=2&cursor=${first.next_cursor}`)).body
    expect(second).toMatchObject({ items: [{ name: "a/3.txt" }], next_cursor: null })
    const underscore = (await call(node, org.api_key, "GET", "/v1/files?prefix=a_")).body
    expect(underscore.items.map((f: any) => f.name)).toEqual(["a_x.txt"])
    const all = (await call(node, org.api_key, "GET", "/v1/files")).body
    expect(all.items.map((f: any) => f.name)).toEqual(["a/1.txt", "a/2.txt", "a/3.txt", "a_x.txt", "ab.txt", "b/1.txt"])
    expectError(await call(node, org.api_key, "GET", "/v1/files?cursor=bm90LWEtY3Vyc29y"), 400, "invalid_cursor")
    expectError(await call(node, org.api_key, "GET", "/v1/files?cursor=%%%"), 400, "invalid_cursor")
    expectError(await call(node, org.api_key, "GET", "/v1/files?limit=0"), 400, "validation_failed")
  })

  it("a taken name is 409 file_exists; overwrite=true replaces it under a new id", async () => {
    const first = await uploaded(node, admin, "notes/today.md", "one")
    expectError(
      await uploadRaw(node, admin, "?name=notes/today.md", "two").then(async (r) => ({
        status: r.status,
        headers: r.headers,
        body: await r.json()
      })),
      409,
      "file_exists"
    )
    const second = await uploaded(node, admin, "notes/today.md", "two", "&overwrite=true")
    expect(second.id).not.toBe(first.id)
    expectError(await call(node, admin, "GET", `/v1/files/${first.id}`), 404, "not_found")
    expect((await download(second.id)).bytes.toString()).toBe("two")
    const events = await auditEvents(node, organizationId)
    const created = events.filter((e: any) => e.action === "CREATE_FILE" && e.targets[0].id === second.id)
    expect(created).toHaveLength(1)
    expect(created[0].details).toMatchObject({ replaced_file_id: first.id, size: 3 })
  })

  it("uploads with overwrite=true at once all succeed: the last one stored is the file, none is 409", async () => {
    const texts = Array.from({ length: 8 }, (_, i) => `version ${i}`)
    const results = await Promise.all(
      texts.map((text) => uploadRaw(node, admin, "?name=notes/raced.md&overwrite=true", text, "text/markdown"))
    )
    const bodies = await Promise.all(results.map((r) => r.json()))
    expect(results.map((r) => r.status), JSON.stringify(bodies)).toEqual(texts.map(() => 201))
    const listed = (await call(node, admin, "GET", "/v1/files?prefix=notes/raced.md")).body.items
    expect(listed).toHaveLength(1)
    expect(bodies.map((b: any) => b.id)).toContain(listed[0].id)
    // each upload replaced the one stored before it: the audit log chains them, every id replaced once
    const events = await auditEvents(node, organizationId)
    const replaced = events
      .filter((e: any) => e.action === "CREATE_FILE" && e.targets[0].name === "notes/raced.md")
      .map((e: any) => e.details.replaced_file_id)
    expect(replaced.filter((id: string | null) => id === null)).toHaveLength(1)
    expect(new Set(replaced).size).toBe(replaced.length)
  })

  it("a delete is audited, and the file and its content are gone", async () => {
    const file = await uploaded(node, admin, "to-delete.bin", patterned(1024 * 1024 + 1))
    const deleted = await call(node, admin, "DELETE", `/v1/files/${file.id}`)
    expect(deleted.status).toBe(204)
    expectError(await call(node, admin, "GET", `/v1/files/${file.id}`), 404, "not_found")
    expectError(await call(node, admin, "GET", `/v1/files/${file.id}/content`), 404, "not_found")
    expectError(await call(node, admin, "DELETE", `/v1/files/${file.id}`), 404, "not_found")
    const chunks = await withDatabase(
      node,
      async (db) =>
        (await db.query("SELECT count(*)::int AS n FROM file_chunks WHERE file_id = $1", [file.id])).rows[0].n
    )
    expect(chunks).toBe(0)
    const events = (await auditEvents(node, organizationId)).filter((e: any) => e.targets[0]?.id === file.id)
    expect(events.map((e: any) => e.action)).toEqual(["CREATE_FILE", "DELETE_FILE"])
    expect(events[1]).toMatchObject({
      actor_type: "user",
      outcome: "success",
      targets: [{ type: "file", id: file.id, name: "to-delete.bin" }],
      details: { size: 1024 * 1024 + 1, sha256: file.sha256 }
    })
  })
})

describe("bad input gets a clear 4xx in the error envelope", () => {
  it("a raw upload without a name, a bad name, a bad agent id, a bad file id", async () => {
    const asJson = async (r: Response) => ({ status: r.status, headers: r.headers, body: await r.json() })
    const missing = await asJson(await uploadRaw(node, admin, "", "x"))
    expectError(missing, 400, "validation_failed")
    expect(missing.body.error.message).toContain("name")
    for (const name of ["../etc/passwd", "/abs", "a//b", "dir/", "a\\b", "./x", "tab\there"]) {
      const r = await asJson(await uploadRaw(node, admin, `?name=${encodeURIComponent(name)}`, "x"))
      expect({ name, status: r.status, code: r.body.error.code }).toEqual({
        name,
        status: 400,
        code: "validation_failed"
      })
    }
    // the name as sent, before the query's decoding tidies it: `//` unencoded, bytes that are not UTF-8, and
    // bidirectional controls that make a name display as another
    for (const query of ["a//b", "x//", "%ED%A0%80", "ok%FF.txt", "evil%E2%80%AEtxt.exe", "a%E2%81%A6b"]) {
      const r = await asJson(await uploadRaw(node, admin, `?name=${query}`, "x"))
      expect({ query, status: r.status, code: r.body.error.code }).toEqual({
        query,
        status: 400,
        code: "validation_failed"
      })
    }
    expect(
      (await asJson(
        await node.fetch("/v1/files?name=a//b", {
          method: "POST",
          apiKey: admin,
          body: multipart([{ name: "file", value: "x", filename: "f.txt" }])
        })
      )).status
    ).toBe(400)
    const names = (await call(node, admin, "GET", "/v1/files?limit=200")).body.items.map((f: any) => f.name)
    expect(names.filter((n: string) => n === "a/b" || n.includes("\uFFFD") || /[\u202a-\u202e\u2066-\u2069]/.test(n)))
      .toEqual([])
    // a name with + and escapes that do decode is still taken as sent
    expect((await asJson(await uploadRaw(node, admin, "?name=two+words%20%C3%A9.txt", "x"))).body.name).toBe(
      "two words é.txt"
    )
    expectError(await asJson(await uploadRaw(node, admin, "?name=x.txt&agent_id=nope", "x")), 400, "validation_failed")
    // the one shape of every validation_failed: the field, then what is wrong with it
    expect((await asJson(await uploadRaw(node, admin, "?name=ok%FF.txt", "x"))).body.error).toMatchObject({
      message: "`name`: must be percent-encoded UTF-8",
      details: { issues: [{ path: "name", message: "must be percent-encoded UTF-8" }] }
    })
    expectError(
      await asJson(await uploadRaw(node, admin, "?name=x.txt&agent_id=00000000-0000-4000-8000-000000000000", "x")),
      400,
      "unknown_agent"
    )
    expectError(await asJson(await uploadRaw(node, admin, "?name=x.txt", "x", "not a type")), 400, "validation_failed")
    const badId = await call(node, admin, "GET", "/v1/files/not-a-uuid")
    expectError(badId, 400, "validation_failed")
    // a message a person can act on, not the schema's description as the expected type
    expect(badId.body.error.message).toBe("`file_id`: must be the id of a workspace file (a UUID), not \"not-a-uuid\"")
    expectError(await call(node, admin, "GET", "/v1/files/00000000-0000-4000-8000-000000000000"), 404, "not_found")
    // without a key, before any body is read
    const anonymous = await asJson(await node.fetch("/v1/files?name=x", { method: "POST", body: "x" }))
    expectError(anonymous, 401, "missing_api_key")
  })
})
