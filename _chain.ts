import { Ajv2020 } from "ajv/dist/2020.js"
const nest = (inner: unknown, d: number): unknown => d === 0 ? inner : { type: "object", properties: { x: nest(inner, d - 1) } }
for (const [n, d] of [[1, 200], [1, 400], [50, 20], [100, 10], [100, 20], [100, 40], [150, 20], [60, 60]]) {
  const defs: Record<string, unknown> = {}
  for (let i = 0; i < n!; i++) defs[`D${i}`] = nest({ type: "object", properties: { next: i + 1 < n! ? { $ref: `#/$defs/D${i + 1}` } : { type: "null" }, back: { $ref: `#/$defs/D0` } } }, d!)
  try { new Ajv2020({ strict: false, allErrors: true }).compile({ $ref: "#/$defs/D0", $defs: defs }); console.log(n, d, "ok") } catch (e) { console.log(n, d, String(e).slice(0, 60)) }
}
