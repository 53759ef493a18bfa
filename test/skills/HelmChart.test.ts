import * as Fs from "node:fs"
import { describe, expect, it } from "vitest"
import * as Yaml from "yaml"
import { VisibilityMode } from "../../schema/Skills.js"

const chart = "deploy/helm/switchyard"
const read = (file: string) => Fs.readFileSync(`${chart}/${file}`, "utf8")

// no helm binary here: these checks read the chart's text for what the issue asks of it
describe("the Helm chart", () => {
  it("renders global.skills.visibilityMode as SERVICE_SKILL_VISIBILITY_MODE, refusing other values", () => {
    const values = Yaml.parse(read("values.yaml"))
    expect(values.global.skills.visibilityMode).toBe("report")
    const deployment = read("templates/deployment.yaml")
    expect(deployment).toMatch(
      /- name: SERVICE_SKILL_VISIBILITY_MODE\n\s+value: \{\{ include "switchyard\.visibilityMode" \. \| quote \}\}/
    )
    const helper = read("templates/_helpers.tpl")
    expect(helper).toContain(".Values.global.skills.visibilityMode")
    const allowed = /has \$mode \(list ((?:"\w+" ?)+)\)/.exec(helper)![1]!.match(/\w+/g)
    expect(allowed).toEqual([...VisibilityMode.literals])
  })

  it("sets only settings the node reads", () => {
    const config = Fs.readFileSync("src/config/SwitchyardConfig.ts", "utf8")
    const names = [...read("templates/deployment.yaml").matchAll(/- name: (SWITCHYARD_\w+)/g)].map((m) => m[1]!)
    expect(names.length).toBeGreaterThan(5)
    for (const name of names) {
      const suffix = name.replace(/^SWITCHYARD_/, "")
      expect(config.includes(`"${suffix}"`) || name === "SWITCHYARD_SECRET_KEY", name).toBe(true)
    }
  })
})

describe("the chart's optional Ingress", () => {
  const values = Yaml.parse(read("values.yaml"))
  const ingress = read("templates/ingress.yaml")

  it("is off unless asked for, and renders nothing then", () => {
    expect(values.ingress).toMatchObject({ enabled: false, className: "", hosts: [], tls: { secretName: "" } })
    expect(ingress.startsWith("{{- if .Values.ingress.enabled }}\n")).toBe(true)
    expect(ingress.trimEnd().endsWith("{{- end }}")).toBe(true)
  })

  it("routes every path to the chart's Service, by its port's name", () => {
    const service = read("templates/service.yaml")
    expect(service).toContain(`name: {{ include "switchyard.name" . }}`)
    expect(service).toMatch(/- \{ name: http, port:/)
    expect(ingress).toMatch(
      /path: \/\n\s+pathType: Prefix\n\s+backend:\n\s+service:\n\s+name: \{\{ include "switchyard\.name" \$ \}\}\n\s+port: \{ name: http \}/
    )
    expect(ingress).toContain("ingressClassName: {{ . | quote }}")
    expect(ingress).toContain("- secretName: {{ . | quote }}")
  })

  it("streams as deploy/nginx.conf does: no buffering, reads as long, bodies left to the nodes", () => {
    const annotations: Record<string, unknown> = values.ingress.annotations
    // annotation values must be strings, or Kubernetes refuses the object
    for (const [name, value] of Object.entries(annotations)) expect(typeof value, name).toBe("string")
    const nginx = Fs.readFileSync("deploy/nginx.conf", "utf8")
    const directive = (name: string) => new RegExp(`^\\s*${name} (\\w+);`, "m").exec(nginx)![1]
    expect(directive("proxy_buffering")).toBe("off")
    expect(annotations["nginx.ingress.kubernetes.io/proxy-buffering"]).toBe("off")
    expect(annotations["nginx.ingress.kubernetes.io/proxy-request-buffering"]).toBe("off")
    expect(`${annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]}s`).toBe(directive("proxy_read_timeout"))
    expect(`${annotations["nginx.ingress.kubernetes.io/proxy-send-timeout"]}s`).toBe(directive("proxy_send_timeout"))
    // the nodes refuse a body past SWITCHYARD_MAX_BODY_BYTES with the JSON envelope; ingress-nginx's 1m would not
    expect(annotations["nginx.ingress.kubernetes.io/proxy-body-size"]).toBe("0")
  })
})
