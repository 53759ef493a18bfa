import { useMutation } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok } from "../api.js"
import { navigate, useLocation } from "../router.js"
import { Empty, ErrorNote, Field, Json, Loading, MoreButton, PageTitle, Status, time, usePaged } from "../ui.js"

const EVENT_TYPE = /^[A-Z][A-Z0-9_]{0,63}$/
type Keys = "event_type" | "from" | "to"

/**
 * The API's `to` is exclusive; the form's "To" date is the last day shown, so the API gets the day after. Anything
 * else (an address edited by hand) goes as it is, for the API to answer.
 */
const dayAfter = (date: string) => {
  const start = /^\d{4}-\d{2}-\d{2}$/.test(date) ? Date.parse(`${date}T00:00:00Z`) : NaN
  return Number.isNaN(start) ? date : new Date(start + 86_400_000).toISOString().slice(0, 10)
}

/** The organization's audit log: filter by type, actor and dates; export what matches as CSV or JSON. */
export default function AuditLog() {
  const { query } = useLocation()
  const filters = {
    event_type: query.get("event_type") ?? "",
    actor: query.get("actor") ?? "",
    from: query.get("from") ?? "",
    to: query.get("to") ?? ""
  }
  const [draft, setDraft] = useState(filters)
  const [errors, setErrors] = useState<Partial<Record<Keys, string>>>({})
  const chosen = Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== "")) as Partial<typeof filters>
  const params = chosen.to === undefined ? chosen : { ...chosen, to: dayAfter(chosen.to) }
  const events = usePaged(["audit", filters], (cursor) =>
    ok(api.GET("/v1/audit-logs", {
      params: { query: { ...params, limit: 50, ...(cursor !== undefined ? { cursor } : {}) } }
    })))
  const exportAs = useMutation({
    mutationFn: async (format: "csv" | "json") => {
      const r = await api.GET("/v1/audit-logs/export", {
        params: { query: { ...params, format } },
        parseAs: "blob"
      })
      if (!r.response.ok) await ok(Promise.resolve({ error: await r.response.clone().json(), response: r.response }))
      const url = URL.createObjectURL(r.data as Blob)
      const a = document.createElement("a")
      a.href = url
      a.download = `audit-log.${format}`
      document.body.append(a)
      a.click()
      a.remove()
      setTimeout(() => URL.revokeObjectURL(url), 10_000)
    }
  })
  const apply = (e: FormEvent) => {
    e.preventDefault()
    const found: Partial<Record<Keys, string>> = {}
    if (draft.event_type !== "" && !EVENT_TYPE.test(draft.event_type)) {
      found.event_type = "An event type is in capitals, e.g. CREATE_API_KEY."
    }
    if (draft.from !== "" && draft.to !== "" && draft.from > draft.to) found.to = "The end is before the start."
    setErrors(found)
    if (Object.keys(found).length > 0) return
    const q = new URLSearchParams(Object.entries(draft).filter(([, v]) => v !== ""))
    navigate(`/audit-log${q.size > 0 ? `?${q}` : ""}`)
  }
  return (
    <section>
      <PageTitle
        actions={
          <div className="actions">
            <button type="button" onClick={() => exportAs.mutate("csv")} disabled={exportAs.isPending}>
              Export CSV
            </button>
            <button type="button" onClick={() => exportAs.mutate("json")} disabled={exportAs.isPending}>
              Export JSON
            </button>
          </div>
        }
      >
        Audit log
      </PageTitle>
      <form className="filters" onSubmit={apply} noValidate aria-label="Filter the audit log">
        <Field label="Event type" error={errors.event_type}>
          {(p) => (
            <input
              {...p}
              placeholder="CREATE_API_KEY"
              value={draft.event_type}
              onChange={(e) => setDraft({ ...draft, event_type: e.target.value.toUpperCase() })}
            />
          )}
        </Field>
        <Field label="Actor" hint="A user or key id">
          {(p) => <input {...p} value={draft.actor} onChange={(e) => setDraft({ ...draft, actor: e.target.value })} />}
        </Field>
        <Field label="From" hint="UTC dates; both days included" error={errors.from}>
          {(p) => (
            <input
              {...p}
              type="date"
              value={draft.from}
              onChange={(e) => setDraft({ ...draft, from: e.target.value })}
            />
          )}
        </Field>
        <Field label="To" error={errors.to}>
          {(p) => (
            <input
              {...p}
              type="date"
              value={draft.to}
              onChange={(e) => setDraft({ ...draft, to: e.target.value })}
            />
          )}
        </Field>
        <button type="submit">Filter</button>
      </form>
      <ErrorNote error={events.error ?? exportAs.error} />
      {events.data === undefined ? events.isPending && <Loading /> : events.items.length === 0
        ? <Empty title="No audit events match these filters." />
        : (
          <div className="table-wrap" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Action</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Targets</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Details</th>
                </tr>
              </thead>
              <tbody>
                {events.items.map((e) => (
                  <tr key={e.id}>
                    <td>{time(e.time)}</td>
                    <td>
                      <code>{e.action}</code>
                    </td>
                    <td>{e.actor.type} {e.actor.id.slice(0, 12)}</td>
                    <td>{e.targets.map((t) => `${t.type} ${t.name ?? t.id.slice(0, 12)}`).join(", ")}</td>
                    <td>
                      <Status value={e.outcome} />
                    </td>
                    <td>
                      {e.details !== null && (
                        <details>
                          <summary>Details</summary>
                          <Json value={e.details} />
                        </details>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      <MoreButton query={events} />
    </section>
  )
}
