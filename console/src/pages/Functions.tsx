import { useMutation, useQuery } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, roleAtLeast, type Schemas } from "../api.js"
import { Link, navigate } from "../router.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Field, Loading, PageTitle, parseJson, time } from "../ui.js"

/** The organization's custom functions: list, create. A function's page edits, versions and invokes it. */
export default function Functions() {
  const session = useSession()
  const canBuild = roleAtLeast(session.role, "builder")
  const [creating, setCreating] = useState(false)
  const functions = useQuery({ queryKey: ["functions"], queryFn: () => ok(api.GET("/v1/functions")) })
  return (
    <section>
      <PageTitle
        actions={canBuild && !creating && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>New function</button>
        )}
      >
        Functions
      </PageTitle>
      {creating && <FunctionForm onDone={() => setCreating(false)} />}
      <ErrorNote error={functions.error} />
      {functions.data === undefined ? functions.isPending && <Loading /> : functions.data?.items.length === 0
        ? (
          <Empty title="No functions yet.">
            {canBuild
              ? "A function is JavaScript run in a sandbox: export default async (input, ctx) => output. Invoke it here or over the API, or attach it to an agent as a tool."
              : "A Builder creates functions; you can then invoke them here."}
          </Empty>
        )
        : (
          <ul className="plain">
            {functions.data?.items.map((f) => (
              <li key={f.id} className="card">
                <h2 className="card-title">
                  <Link to={`/functions/${f.id}`}>{f.name}</Link>
                </h2>
                {f.description !== "" && <p>{f.description}</p>}
                <p className="muted">
                  version {f.current_version} · {f.timeout_ms} ms · {f.memory_mb} MiB · changed {time(f.updated_at)}
                </p>
              </li>
            ))}
          </ul>
        )}
    </section>
  )
}

const TEMPLATE = `export default async (input, ctx) => {
  ctx.log("called with", input)
  return { hello: input.name ?? "world" }
}
`
const SCHEMA = `{
  "type": "object",
  "properties": { "name": { "type": "string" } }
}`

type Keys = "name" | "description" | "input_schema" | "code" | "timeout_ms" | "memory_mb"

const intIn = (text: string, min: number, max: number): number | string => {
  const n = Number(text.trim())
  if (text.trim() === "" || !Number.isInteger(n)) return "Enter a whole number."
  if (n < min || n > max) return `Between ${min} and ${max}.`
  return n
}

/** Create, and edit (`current` given: saving makes a new version). */
export const FunctionForm = ({ current, onDone }: {
  readonly current?: Schemas["CustomFunction"]
  readonly onDone: () => void
}) => {
  const [name, setName] = useState(current?.name ?? "")
  const [description, setDescription] = useState(current?.description ?? "")
  const [schema, setSchema] = useState(
    current === undefined ? SCHEMA : JSON.stringify(current.input_schema, null, 2)
  )
  const [code, setCode] = useState(current?.code ?? TEMPLATE)
  const [timeout, setTimeoutMs] = useState(String(current?.timeout_ms ?? 5000))
  const [memory, setMemory] = useState(String(current?.memory_mb ?? 32))
  const [errors, setErrors] = useState<Partial<Record<Keys, string>>>({})
  const save = useMutation({
    mutationFn: (body: Schemas["CreateFunction"]) =>
      current === undefined
        ? ok(api.POST("/v1/functions", { body }))
        : ok(api.PATCH("/v1/functions/{function_id}", { params: { path: { function_id: current.id } }, body })),
    onSuccess: (saved) => {
      queryClient.invalidateQueries({ queryKey: ["functions"] })
      onDone()
      if (current === undefined) navigate(`/functions/${saved.id}`)
    }
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const found: Partial<Record<Keys, string>> = {}
    if (!/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/.test(name.trim())) {
      found.name = "1-64 letters, digits, _ or -, starting with a letter or _ (agents call it by this name)."
    }
    if (description.length > 4000) found.description = "At most 4000 characters."
    const parsed = parseJson(schema)
    if (parsed.error !== undefined) found.input_schema = parsed.error
    else if (
      parsed.value !== undefined && (typeof parsed.value !== "object" || parsed.value === null ||
        Array.isArray(parsed.value))
    ) found.input_schema = "A JSON Schema object, e.g. {\"type\": \"object\"}."
    if (code.trim() === "") found.code = "Write the function: export default async (input, ctx) => output."
    else if (code.length > 256 * 1024) found.code = "At most 256 KiB of code."
    const t = intIn(timeout, 1, 30_000)
    if (typeof t === "string") found.timeout_ms = t
    const m = intIn(memory, 16, 64)
    if (typeof m === "string") found.memory_mb = m
    setErrors(found)
    if (Object.keys(found).length > 0) return
    save.mutate({
      name: name.trim(),
      description,
      ...(parsed.value !== undefined ? { input_schema: parsed.value as Record<string, unknown> } : {}),
      code,
      timeout_ms: t as number,
      memory_mb: m as number
    })
  }
  return (
    <form
      onSubmit={submit}
      noValidate
      className="form panel"
      aria-label={current === undefined ? "New function" : "Edit function"}
    >
      <Field label="Function name" error={errors.name} hint="The agent tool's name, e.g. weather or lookup_order.">
        {(p) => <input {...p} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <Field label="Description" error={errors.description} hint="An agent reads it as the tool's description.">
        {(p) => <textarea {...p} rows={2} value={description} onChange={(e) => setDescription(e.target.value)} />}
      </Field>
      <Field
        label="Input schema"
        error={errors.input_schema}
        hint="JSON Schema of the input, checked before the function runs; the Invoke form is made from it."
      >
        {(p) => (
          <textarea
            {...p}
            className="code-input"
            rows={6}
            spellCheck={false}
            value={schema}
            onChange={(e) => setSchema(e.target.value)}
          />
        )}
      </Field>
      <Field
        label="Code"
        error={errors.code}
        hint="An ES module: export default async (input, ctx) => output. ctx.connectors.invoke, ctx.files, ctx.log."
      >
        {(p) => (
          <textarea
            {...p}
            className="code-input"
            rows={12}
            spellCheck={false}
            value={code}
            onChange={(e) => setCode(e.target.value)}
          />
        )}
      </Field>
      <div className="row">
        <Field label="Timeout (ms)" error={errors.timeout_ms} hint="1-30000">
          {(p) => <input {...p} inputMode="numeric" value={timeout} onChange={(e) => setTimeoutMs(e.target.value)} />}
        </Field>
        <Field label="Memory (MiB)" error={errors.memory_mb} hint="16-64">
          {(p) => <input {...p} inputMode="numeric" value={memory} onChange={(e) => setMemory(e.target.value)} />}
        </Field>
      </div>
      <ErrorNote error={save.error} />
      <button type="submit" className="primary" disabled={save.isPending}>
        {current === undefined ? "Create function" : "Save as a new version"}
      </button>
      <button type="button" onClick={onDone}>Cancel</button>
    </form>
  )
}
