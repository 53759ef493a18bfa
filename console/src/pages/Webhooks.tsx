import { useMutation, useQuery } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, type Schemas } from "../api.js"
import { Empty, ErrorNote, Field, Loading, PageTitle, ShowOnce, Status, time } from "../ui.js"

/** Webhook endpoints (Admins): create (the signing secret shown once), enable or disable, ping, delete. */
export default function Webhooks() {
  const [url, setUrl] = useState("")
  const [description, setDescription] = useState("")
  const [types, setTypes] = useState("")
  const [problem, setProblem] = useState<string | undefined>()
  const hooks = useQuery({ queryKey: ["webhooks"], queryFn: () => ok(api.GET("/v1/webhooks")) })
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["webhooks"] })
  const path = (id: string) => ({ params: { path: { webhook_id: id } } })
  const create = useMutation({
    mutationFn: (body: Schemas["CreateWebhook"]) => ok(api.POST("/v1/webhooks", { body })),
    onSuccess: () => {
      setUrl("")
      setDescription("")
      refresh()
    }
  })
  const toggle = useMutation({
    mutationFn: ({ enabled, id }: { id: string; enabled: boolean }) =>
      ok(api.PATCH("/v1/webhooks/{webhook_id}", { ...path(id), body: { enabled } })),
    onSuccess: refresh
  })
  const ping = useMutation({ mutationFn: (id: string) => ok(api.POST("/v1/webhooks/{webhook_id}/ping", path(id))) })
  const remove = useMutation({
    mutationFn: (id: string) => ok(api.DELETE("/v1/webhooks/{webhook_id}", path(id))),
    onSuccess: refresh
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (!/^https?:\/\/\S+$/.test(url.trim())) return setProblem("The endpoint is an http(s) URL.")
    setProblem(undefined)
    const eventTypes = types.split(/[\s,]+/).filter(Boolean) as Array<Schemas["EventType"]>
    create.mutate({
      url: url.trim(),
      description,
      ...(eventTypes.length > 0 ? { event_types: eventTypes } : {})
    })
  }
  return (
    <section>
      <PageTitle>Webhooks</PageTitle>
      <form onSubmit={submit} noValidate className="form panel" aria-label="New webhook">
        <Field label="Endpoint URL" error={problem}>
          {(p) => <input {...p} type="url" value={url} onChange={(e) => setUrl(e.target.value)} />}
        </Field>
        <Field label="Description">
          {(p) => <input {...p} value={description} onChange={(e) => setDescription(e.target.value)} />}
        </Field>
        <Field label="Event types" hint="Comma-separated, e.g. task.completed, task.error; empty: every type">
          {(p) => <input {...p} value={types} onChange={(e) => setTypes(e.target.value)} />}
        </Field>
        <ErrorNote error={create.error} />
        <button type="submit" className="primary" disabled={create.isPending}>Add webhook</button>
      </form>
      {create.data && <ShowOnce label="Signing secret" value={create.data.secret} />}
      <ErrorNote error={hooks.error ?? toggle.error ?? ping.error ?? remove.error} />
      {ping.isSuccess && <p role="status">Ping sent.</p>}
      {hooks.data === undefined ? hooks.isPending && <Loading /> : hooks.data?.items.length === 0
        ? (
          <Empty title="No webhooks yet.">
            Add an endpoint to receive task, approval and audit events as they happen.
          </Empty>
        )
        : (
          <ul className="plain">
            {hooks.data?.items.map((h) => (
              <li key={h.id} className="card">
                <strong>{h.url}</strong> <Status value={h.enabled ? "active" : (h.disabled_reason ?? "disabled")} />
                <p className="muted">
                  {h.description} · {h.event_types.length === 0 ? "every event" : h.event_types.join(", ")} · since{" "}
                  {time(h.created_at)}
                </p>
                <div className="actions">
                  <button type="button" onClick={() => toggle.mutate({ id: h.id, enabled: !h.enabled })}>
                    {h.enabled ? "Disable" : "Enable"}
                  </button>
                  <button type="button" onClick={() => ping.mutate(h.id)}>Ping</button>
                  <button
                    type="button"
                    className="danger"
                    aria-label={`Delete webhook ${h.url}`}
                    onClick={() => window.confirm(`Delete the webhook ${h.url}?`) && remove.mutate(h.id)}
                  >
                    Delete
                  </button>
                </div>
              </li>
            ))}
          </ul>
        )}
    </section>
  )
}
