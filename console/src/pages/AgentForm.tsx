import { useQueries, useQuery } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ApiError, ok, type Schemas } from "../api.js"
import { ErrorNote, type Errors, Field, parseJson } from "../ui.js"

type Provider = Schemas["ModelConfig"]["provider"]
type Keys = "name" | "model" | "script" | "budget" | "max_steps"

/** Create or edit an agent: validated here before the API sees it; the API's own errors shown as sent. */
export const AgentForm = ({ agent, submitLabel, onSubmit, pending, error }: {
  readonly agent?: Schemas["Agent"]
  readonly submitLabel: string
  readonly onSubmit: (body: Schemas["CreateAgent"]) => void
  readonly pending: boolean
  readonly error: unknown
}) => {
  const [name, setName] = useState(agent?.name ?? "")
  const [instructions, setInstructions] = useState(agent?.instructions ?? "")
  const [provider, setProvider] = useState<Provider>(agent?.model.provider ?? "openai")
  const [model, setModel] = useState(agent?.model.name ?? "")
  const [baseUrl, setBaseUrl] = useState(agent?.model.base_url ?? "")
  const [script, setScript] = useState(agent?.model.script ? JSON.stringify(agent.model.script, null, 2) : "")
  const [budget, setBudget] = useState(agent?.budget ? String(agent.budget.limit_usd) : "")
  const [period, setPeriod] = useState<NonNullable<Schemas["Budget"]["period"]>>(agent?.budget?.period ?? "month")
  const [maxSteps, setMaxSteps] = useState(String(agent?.max_steps ?? 10))
  const [skills, setSkills] = useState<Record<string, ReadonlyArray<string>>>(
    Object.fromEntries((agent?.skills ?? []).map((s) => [s.connection_id, s.operation_ids]))
  )
  const [errors, setErrors] = useState<Errors<Keys>>({})

  const submit = (e: FormEvent) => {
    e.preventDefault()
    const found: Errors<Keys> = {}
    if (name.trim() === "") found.name = "Give the agent a name."
    if (provider !== "scripted" && model.trim() === "") found.model = "Name the model, e.g. gpt-4.1-mini."
    const parsedScript = provider === "scripted" ? parseJson(script) : { value: undefined }
    if (parsedScript.error !== undefined) found.script = parsedScript.error
    else if (provider === "scripted" && !Array.isArray(parsedScript.value)) {
      found.script = "A scripted model needs a JSON list of turns, e.g. [{\"text\": \"Hello\"}]."
    }
    const limit = budget.trim() === "" ? undefined : Number(budget)
    if (limit !== undefined && !(limit > 0)) found.budget = "A budget is a positive amount in USD."
    const steps = Number(maxSteps)
    if (!Number.isInteger(steps) || steps < 1 || steps > 100) found.max_steps = "Between 1 and 100."
    setErrors(found)
    if (Object.keys(found).length > 0) return
    const modelConfig: Schemas["ModelConfig"] = {
      provider,
      ...(model.trim() !== "" ? { name: model.trim() } : {}),
      ...(baseUrl.trim() !== "" ? { base_url: baseUrl.trim() } : {}),
      ...(provider === "scripted" ? { script: parsedScript.value as Array<Schemas["ScriptTurn"]> } : {})
    }
    onSubmit({
      name: name.trim(),
      instructions,
      model: modelConfig,
      skills: Object.entries(skills).filter(([, ops]) => ops.length > 0).map(([connection_id, ops]) => ({
        connection_id,
        operation_ids: [...ops]
      })),
      ...(limit !== undefined ? { budget: { limit_usd: limit, period } } : {}),
      max_steps: steps
    })
  }

  return (
    <form onSubmit={submit} noValidate className="form">
      <Field label="Name" error={errors.name}>
        {(p) => <input {...p} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <Field label="Instructions" hint="What the agent is for and how it should answer.">
        {(p) => <textarea {...p} rows={4} value={instructions} onChange={(e) => setInstructions(e.target.value)} />}
      </Field>
      <div className="row">
        <Field label="Model provider">
          {(p) => (
            <select {...p} value={provider} onChange={(e) => setProvider(e.target.value as Provider)}>
              <option value="openai">OpenAI (Responses)</option>
              <option value="openai-chat">OpenAI-compatible (Chat Completions)</option>
              <option value="anthropic">Anthropic</option>
              <option value="scripted">Scripted (tests and demos)</option>
            </select>
          )}
        </Field>
        <Field label="Model" error={errors.model}>
          {(p) => <input {...p} value={model} onChange={(e) => setModel(e.target.value)} />}
        </Field>
      </div>
      <Field label="Model base URL" hint="Optional: another endpoint speaking the provider's protocol.">
        {(p) => <input {...p} type="url" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} />}
      </Field>
      {provider === "scripted" && (
        <Field label="Script" error={errors.script} hint="JSON list of turns the model answers with.">
          {(p) => (
            <textarea
              {...p}
              rows={4}
              value={script}
              onChange={(e) => setScript(e.target.value)}
            />
          )}
        </Field>
      )}
      <div className="row">
        <Field label="Budget (USD)" error={errors.budget} hint="Empty: no budget.">
          {(p) => <input {...p} inputMode="decimal" value={budget} onChange={(e) => setBudget(e.target.value)} />}
        </Field>
        <Field label="Budget period">
          {(p) => (
            <select {...p} value={period} onChange={(e) => setPeriod(e.target.value as typeof period)}>
              <option value="day">day</option>
              <option value="month">month</option>
              <option value="total">total</option>
            </select>
          )}
        </Field>
        <Field label="Max steps" error={errors.max_steps}>
          {(p) => <input {...p} inputMode="numeric" value={maxSteps} onChange={(e) => setMaxSteps(e.target.value)} />}
        </Field>
      </div>
      <ToolPicker value={skills} onChange={setSkills} />
      <ErrorNote error={error} />
      <button type="submit" className="primary" disabled={pending}>{submitLabel}</button>
    </form>
  )
}

/** The operations of each connection the agent may call, as checkboxes per connection. */
const ToolPicker = ({ value, onChange }: {
  readonly value: Record<string, ReadonlyArray<string>>
  readonly onChange: (v: Record<string, ReadonlyArray<string>>) => void
}) => {
  const catalog = useQuery({
    queryKey: ["connectors", "all"],
    queryFn: () => ok(api.GET("/v1/tools", { params: { query: { type: "connector", limit: 100 } } }))
  })
  const connectors = (catalog.data?.items ?? []).filter((c) => c.connections.length > 0)
  const operations = useQueries({
    queries: connectors.map((c) => ({
      queryKey: ["operations", c.id],
      queryFn: () =>
        ok(api.GET("/v1/tools/connectors/{connector_id}/operations", { params: { path: { connector_id: c.id } } }))
    }))
  })
  if (catalog.error instanceof ApiError && catalog.error.status === 403) return null
  return (
    <fieldset>
      <legend>Tools</legend>
      <ErrorNote error={catalog.error} />
      {connectors.length === 0 && (
        <p className="muted">
          No connections yet: connect a connector to give agents tools.
        </p>
      )}
      {connectors.map((c, i) =>
        c.connections.map((conn) => (
          <fieldset key={conn.id} className="tools">
            <legend>{c.name} — {conn.name}</legend>
            {(operations[i]?.data ?? []).map((op) => {
              // an agent names an operation by its operationId (or its id, as older agents may)
              const chosen = value[conn.id] ?? []
              const has = (o: string) => o === op.operationId || o === op.id
              return (
                <label key={op.id} className="check">
                  <input
                    type="checkbox"
                    checked={chosen.some(has)}
                    onChange={(e) =>
                      onChange({
                        ...value,
                        [conn.id]: e.target.checked
                          ? [...chosen, op.operationId]
                          : chosen.filter((o) => !has(o))
                      })}
                  />
                  {op.pretty_name} <code>{op.operationId}</code> <code>{op.method.toUpperCase()} {op.path}</code>
                </label>
              )
            })}
          </fieldset>
        ))
      )}
    </fieldset>
  )
}
