import { type FormEvent, useState } from "react"
import { Field, parseJson } from "./ui.js"

/** A JSON Schema as the API returns it (the operation's input schema): read loosely, field by field. */
export interface JsonSchema {
  readonly type?: string | ReadonlyArray<string>
  readonly properties?: Record<string, JsonSchema>
  readonly required?: ReadonlyArray<string>
  readonly enum?: ReadonlyArray<unknown>
  readonly description?: string
  readonly title?: string
  readonly minLength?: number
  readonly maxLength?: number
  readonly minimum?: number
  readonly maximum?: number
  readonly items?: JsonSchema
  readonly default?: unknown
  readonly additionalProperties?: boolean | JsonSchema
}

const typeOf = (s: JsonSchema) =>
  (Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type) as string | undefined

type Values = Record<string, string>

/** Leaves of the schema, with their path: nested objects with properties become fieldsets. */
const leaves = (schema: JsonSchema, prefix: ReadonlyArray<string> = []): Array<{
  path: ReadonlyArray<string>
  schema: JsonSchema
  required: boolean
}> =>
  Object.entries(schema.properties ?? {}).flatMap(([name, s]) =>
    typeOf(s) === "object" && s.properties !== undefined && Object.keys(s.properties).length > 0
      ? leaves(s, [...prefix, name])
      : typeOf(s) === "object" && s.additionalProperties === false
      ? [] // an empty group (no path parameters, no body): nothing to ask
      : [{ path: [...prefix, name], schema: s, required: (schema.required ?? []).includes(name) }]
  )

const check = (raw: string, s: JsonSchema, required: boolean): { value?: unknown; error?: string } => {
  const type = typeOf(s)
  if (raw.trim() === "") return required ? { error: "Required." } : {}
  if (s.enum !== undefined && !s.enum.map(String).includes(raw)) return { error: `One of ${s.enum.join(", ")}.` }
  switch (type) {
    case "integer":
    case "number": {
      const n = Number(raw)
      if (!Number.isFinite(n) || (type === "integer" && !Number.isInteger(n))) {
        return { error: `Enter ${type === "integer" ? "a whole number" : "a number"}.` }
      }
      if (s.minimum !== undefined && n < s.minimum) return { error: `At least ${s.minimum}.` }
      if (s.maximum !== undefined && n > s.maximum) return { error: `At most ${s.maximum}.` }
      return { value: n }
    }
    case "boolean":
      return { value: raw === "true" }
    case "array":
    case "object": {
      const parsed = parseJson(raw)
      if (parsed.error !== undefined) return parsed
      if (type === "array" && !Array.isArray(parsed.value)) return { error: "Enter a JSON list, e.g. [\"a\"]." }
      return parsed
    }
    default:
      if (s.minLength !== undefined && raw.length < s.minLength) return { error: `At least ${s.minLength} characters.` }
      if (s.maxLength !== undefined && raw.length > s.maxLength) return { error: `At most ${s.maxLength} characters.` }
      return { value: raw }
  }
}

const set = (target: Record<string, unknown>, path: ReadonlyArray<string>, value: unknown) => {
  let node = target
  for (const key of path.slice(0, -1)) node = (node[key] ??= {}) as Record<string, unknown>
  node[path[path.length - 1]!] = value
}

/** A form generated from an input schema, validated against it before `onSubmit` gets the value. */
export const SchemaForm = ({ schema, submitLabel, pending, onSubmit, noInput = "This operation takes no input." }: {
  readonly schema: JsonSchema
  readonly submitLabel: string
  readonly pending: boolean
  readonly onSubmit: (value: Record<string, unknown>) => void
  /** Said when the schema asks for nothing. */
  readonly noInput?: string
}) => {
  const fields = leaves(schema)
  const [values, setValues] = useState<Values>({})
  const [errors, setErrors] = useState<Record<string, string>>({})
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const out: Record<string, unknown> = {}
    const found: Record<string, string> = {}
    for (const f of fields) {
      const key = f.path.join(".")
      const r = check(values[key] ?? "", f.schema, f.required)
      if (r.error !== undefined) found[key] = r.error
      else if (r.value !== undefined) set(out, f.path, r.value)
    }
    setErrors(found)
    if (Object.keys(found).length === 0) onSubmit(out)
  }
  return (
    <form onSubmit={submit} noValidate className="form">
      {fields.length === 0 && <p className="muted">{noInput}</p>}
      {fields.map((f) => {
        const key = f.path.join(".")
        const type = typeOf(f.schema)
        const label = `${f.path.filter((p) => !/_params$/.test(p)).join(".") || key}${f.required ? " (required)" : ""}`
        const hint = [f.schema.description, type === "array" ? "JSON list" : type === "object" ? "JSON object" : type]
          .filter(Boolean).join(" · ")
        const setValue = (v: string) => setValues({ ...values, [key]: v })
        return (
          <Field key={key} label={label} error={errors[key]} hint={hint}>
            {(p) =>
              f.schema.enum !== undefined || type === "boolean"
                ? (
                  <select {...p} value={values[key] ?? ""} onChange={(e) => setValue(e.target.value)}>
                    <option value="">—</option>
                    {(f.schema.enum ?? [true, false]).map((v) => (
                      <option key={String(v)} value={String(v)}>{String(v)}</option>
                    ))}
                  </select>
                )
                : type === "array" || type === "object"
                ? <textarea {...p} rows={3} value={values[key] ?? ""} onChange={(e) => setValue(e.target.value)} />
                : (
                  <input
                    {...p}
                    inputMode={type === "integer" || type === "number" ? "decimal" : undefined}
                    value={values[key] ?? ""}
                    onChange={(e) => setValue(e.target.value)}
                  />
                )}
          </Field>
        )
      })}
      <button type="submit" className="primary" disabled={pending}>{submitLabel}</button>
    </form>
  )
}
