import { useMutation, useQuery } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, roleAtLeast, type Schemas } from "../api.js"
import { Link, navigate } from "../router.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Field, Loading, PageTitle, Status, time } from "../ui.js"

type Keys = "name" | "agent" | "when" | "text"

/** Schedules that invoke agents by cron or interval: list, create, pause, resume, run now, delete. */
export default function Schedules() {
  const session = useSession()
  const canBuild = roleAtLeast(session.role, "builder")
  const [creating, setCreating] = useState(false)
  const schedules = useQuery({ queryKey: ["schedules"], queryFn: () => ok(api.GET("/v1/schedules")) })
  const agents = useQuery({ queryKey: ["agents"], queryFn: () => ok(api.GET("/v1/agents")) })
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["schedules"] })
  const path = (id: string) => ({ params: { path: { schedule_id: id } } })
  const pause = useMutation({
    mutationFn: (id: string) => ok(api.POST("/v1/schedules/{schedule_id}/pause", path(id))),
    onSuccess: refresh
  })
  const resume = useMutation({
    mutationFn: (id: string) => ok(api.POST("/v1/schedules/{schedule_id}/resume", path(id))),
    onSuccess: refresh
  })
  const trigger = useMutation({
    mutationFn: (id: string) => ok(api.POST("/v1/schedules/{schedule_id}/trigger", path(id))),
    onSuccess: (task) => navigate(`/tasks/${task.id}`)
  })
  const remove = useMutation({
    mutationFn: (id: string) => ok(api.DELETE("/v1/schedules/{schedule_id}", path(id))),
    onSuccess: refresh
  })
  const agentName = (id: string) => agents.data?.items.find((a) => a.id === id)?.name ?? id.slice(0, 8)
  return (
    <section>
      <PageTitle
        actions={canBuild && !creating && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>New schedule</button>
        )}
      >
        Schedules
      </PageTitle>
      {creating && <NewSchedule agents={agents.data?.items ?? []} onDone={() => setCreating(false)} />}
      <ErrorNote error={schedules.error ?? pause.error ?? resume.error ?? trigger.error ?? remove.error} />
      {schedules.data === undefined ? schedules.isPending && <Loading /> : schedules.data?.items.length === 0
        ? (
          <Empty title="No schedules yet.">
            {canBuild
              ? "A schedule invokes an agent by cron (0 9 * * 1-5) or every interval (15m), in a time zone."
              : "A Builder creates schedules; they appear here."}
          </Empty>
        )
        : (
          <ul className="plain">
            {schedules.data?.items.map((s) => (
              <li key={s.id} className="card">
                <h2 className="card-title">
                  {s.name} <Status value={s.enabled ? "active" : "paused"} />
                </h2>
                <p className="muted">
                  <Link to={`/agents/${s.agent_id}`}>{agentName(s.agent_id)}</Link> · {s.cron ?? `every ${s.every}`} ·
                  {" "}
                  {s.timezone} · next {s.next_runs[0]?.local ?? "—"}
                  {s.last_run !== null && ` · last ${s.last_run.status} ${time(s.last_run.scheduled_for)}`}
                </p>
                {canBuild && (
                  <div className="actions">
                    {s.enabled
                      ? <button type="button" onClick={() => pause.mutate(s.id)}>Pause</button>
                      : <button type="button" onClick={() => resume.mutate(s.id)}>Resume</button>}
                    <button type="button" onClick={() => trigger.mutate(s.id)}>Run now</button>
                    <button
                      type="button"
                      className="danger"
                      aria-label={`Delete schedule ${s.name}`}
                      onClick={() => window.confirm(`Delete the schedule ${s.name}?`) && remove.mutate(s.id)}
                    >
                      Delete
                    </button>
                  </div>
                )}
              </li>
            ))}
          </ul>
        )}
    </section>
  )
}

const NewSchedule = ({ agents, onDone }: {
  readonly agents: ReadonlyArray<Schemas["Agent"]>
  readonly onDone: () => void
}) => {
  const session = useSession()
  const [name, setName] = useState("")
  const [agentId, setAgentId] = useState(agents[0]?.id ?? "")
  const [kind, setKind] = useState<"cron" | "every">("cron")
  const [when, setWhen] = useState("")
  const [timezone, setTimezone] = useState(Intl.DateTimeFormat().resolvedOptions().timeZone)
  const [text, setText] = useState("")
  const [errors, setErrors] = useState<Partial<Record<Keys, string>>>({})
  const create = useMutation({
    mutationFn: (body: Schemas["CreateSchedule"]) => ok(api.POST("/v1/schedules", { body })),
    onSuccess: () => {
      queryClient.invalidateQueries({ queryKey: ["schedules"] })
      onDone()
    }
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const found: Partial<Record<Keys, string>> = {}
    if (name.trim() === "") found.name = "Name the schedule."
    if (agentId === "") found.agent = "Choose the agent to invoke (create one first)."
    if (kind === "cron" && when.trim().split(/\s+/).length !== 5) found.when = "Five cron fields, e.g. 0 9 * * 1-5."
    if (kind === "every" && !/^\d+\s*[smhd]$/.test(when.trim())) found.when = "An interval such as 15m, 2h or 1d."
    if (text.trim() === "") found.text = "Write the message the agent gets each time."
    setErrors(found)
    if (Object.keys(found).length > 0) return
    create.mutate({
      name: name.trim(),
      agent_id: agentId,
      ...(kind === "cron" ? { cron: when.trim() } : { every: when.trim().replace(/\s+/g, "") }),
      timezone,
      input: { text: text.trim(), user: { id: session.user.id, email: session.user.email } }
    })
  }
  return (
    <form onSubmit={submit} noValidate className="form panel" aria-label="New schedule">
      <Field label="Schedule name" error={errors.name}>
        {(p) => <input {...p} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <Field label="Agent" error={errors.agent}>
        {(p) => (
          <select {...p} value={agentId} onChange={(e) => setAgentId(e.target.value)}>
            {agents.map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
          </select>
        )}
      </Field>
      <div className="row">
        <Field label="Repeat by">
          {(p) => (
            <select {...p} value={kind} onChange={(e) => setKind(e.target.value as typeof kind)}>
              <option value="cron">Cron expression</option>
              <option value="every">Interval</option>
            </select>
          )}
        </Field>
        <Field label={kind === "cron" ? "Cron" : "Every"} error={errors.when}>
          {(p) => <input {...p} value={when} onChange={(e) => setWhen(e.target.value)} />}
        </Field>
        <Field label="Time zone">
          {(p) => <input {...p} value={timezone} onChange={(e) => setTimezone(e.target.value)} />}
        </Field>
      </div>
      <Field label="Message" error={errors.text}>
        {(p) => <textarea {...p} rows={2} value={text} onChange={(e) => setText(e.target.value)} />}
      </Field>
      <ErrorNote error={create.error} />
      <button type="submit" className="primary" disabled={create.isPending}>Create schedule</button>
      <button type="button" onClick={onDone}>Cancel</button>
    </form>
  )
}
