import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/** One sample of the Prometheus text format: `name{labels} value`. */
export interface Sample {
  readonly name: string
  readonly labels: Record<string, string>
  readonly value: number
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (-?[0-9.e+-]+|[Nn]a[Nn]|[+-]Inf)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y

/** Parses the text format strictly: a line that is neither a comment nor a sample fails the test (NaN in any case,
 * as Prometheus reads it: prom-client writes `Nan`). */
export const parseMetrics = (text: string): Array<Sample> => {
  const samples: Array<Sample> = []
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ") || line.startsWith("# TYPE ")) continue
    const match = LINE.exec(line)
    if (match === null) throw new Error(`not a sample: ${line}`)
    const labels: Record<string, string> = {}
    const body = match[3] ?? ""
    LABEL.lastIndex = 0
    while (LABEL.lastIndex < body.length) {
      const at = LABEL.lastIndex
      const label = LABEL.exec(body)
      if (label === null) throw new Error(`bad labels at ${at}: ${line}`)
      labels[label[1]!] = label[2]!.replace(/\\n/g, "\n").replace(/\\"/g, "\"").replace(/\\\\/g, "\\")
    }
    samples.push({ name: match[1]!, labels, value: Number(match[4]) })
  }
  return samples
}

/** The sum of the samples named `name` whose labels include `labels`. */
export const total = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)

export const scrape = async (port: number) => {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`)
  if (response.status !== 200) throw new Error(`scrape: ${response.status}`)
  return parseMetrics(await response.text())
}

/** A span as an OTLP/HTTP JSON export carries it, with its attributes as plain values. */
export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: number
  readonly attributes: Record<string, unknown>
  readonly service: string | undefined
  /** The node that exported it (`service.instance.id`). */
  readonly instance: string | undefined
  /** Start and end, Unix epoch milliseconds. */
  readonly startMs: number
  readonly endMs: number
  /** 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message: string | undefined }
  readonly events: ReadonlyArray<{ readonly name: string; readonly attributes: Record<string, unknown> }>
}

const valueOf = (v: any): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ??
    v.arrayValue?.values?.map(valueOf)

const attributesOf = (list: ReadonlyArray<any> | undefined) =>
  Object.fromEntries((list ?? []).map((a: any) => [a.key, valueOf(a.value)]))

/** A real OTLP/HTTP receiver on 127.0.0.1 that accepts JSON trace exports (POST /v1/traces). */
export const startOtlpReceiver = async () => {
  const spans: Array<ReceivedSpan> = []
  const requests: Array<{ readonly path: string; readonly contentType: string | undefined }> = []
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      requests.push({ path: req.url ?? "", contentType: req.headers["content-type"] })
      if (req.url !== "/v1/traces" || !String(req.headers["content-type"]).includes("json")) {
        res.writeHead(415).end()
        return
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributesOf(rs.resource?.attributes)
        const service = resource["service.name"] as string | undefined
        const instance = resource["service.instance.id"] as string | undefined
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId || undefined,
              name: s.name,
              kind: s.kind,
              attributes: attributesOf(s.attributes),
              service,
              instance,
              startMs: Number(BigInt(s.startTimeUnixNano) / 1_000_000n),
              endMs: Number(BigInt(s.endTimeUnixNano) / 1_000_000n),
              status: { code: s.status?.code ?? 0, message: s.status?.message },
              events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attributesOf(e.attributes) }))
            })
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    spans,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

export { eventually } from "../support/Poll.js"
