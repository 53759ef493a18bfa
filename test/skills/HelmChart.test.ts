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
