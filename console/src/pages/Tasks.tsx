import { useQuery } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, type Schemas } from "../api.js"
import { Link, navigate, useLocation } from "../router.js"
import { Empty, ErrorNote, Field, Loading, MoreButton, PageTitle, Status, time, usePaged } from "../ui.js"

type TaskStatus = Schemas["Task"]["status"]
const STATUSES: ReadonlyArray<TaskStatus> = [
  "pending",
  "executing",
  "waiting_approval",
  "completed",
  "error",
  "cancelled"
]

/** Tasks, newest first, filtered by agent, status and date (the filters live in the address). */
export default function Tasks() {
  const { query } = useLocation()
  const filters = {
    agent_id: query.get("agent_id") ?? "",
    status: query.get("status") ?? "",
    created_after: query.get("created_after") ?? ""
  }
  const [draft, setDraft] = useState(filters)
  const agents = useQuery({ queryKey: ["agents"], queryFn: () => ok(api.GET("/v1/agents")) })
  const tasks = usePaged(["tasks", "list", filters], (cursor) =>
    ok(api.GET("/v1/tasks", {
      params: {
        query: {
          limit: 25,
          ...(cursor !== undefined ? { cursor } : {}),
          ...(filters.agent_id !== "" ? { agent_id: filters.agent_id } : {}),
          ...(filters.status !== "" ? { status: filters.status as TaskStatus } : {}),
          ...(filters.created_after !== "" ? { created_after: filters.created_after } : {})
        }
      }
    })))
  const apply = (e: FormEvent) => {
    e.preventDefault()
    const q = new URLSearchParams(Object.entries(draft).filter(([, v]) => v !== ""))
    navigate(`/tasks${q.size > 0 ? `?${q}` : ""}`)
  }
  const agentName = (id: string) => agents.data?.items.find((a) => a.id === id)?.name ?? id.slice(0, 8)
  return (
    <section>
      <PageTitle>Tasks</PageTitle>
      <form className="filters" onSubmit={apply} aria-label="Filter tasks">
        <Field label="Agent">
          {(p) => (
            <select
              {...p}
              value={draft.agent_id}
              onChange={(e) => setDraft({ ...draft, agent_id: e.target.value })}
            >
              <option value="">Any agent</option>
              {agents.data?.items.map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
            </select>
          )}
        </Field>
        <Field label="Status">
          {(p) => (
            <select {...p} value={draft.status} onChange={(e) => setDraft({ ...draft, status: e.target.value })}>
              <option value="">Any status</option>
              {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
            </select>
          )}
        </Field>
        <Field label="Created after">
          {(p) => (
            <input
              {...p}
              type="date"
              value={draft.created_after}
              onChange={(e) => setDraft({ ...draft, created_after: e.target.value })}
            />
          )}
        </Field>
        <button type="submit">Filter</button>
      </form>
      <ErrorNote error={tasks.error} />
      {tasks.data === undefined ? tasks.isPending && <Loading /> : tasks.items.length === 0
        ? (
          <Empty title="No tasks match.">
            Tasks appear when someone talks to an agent (its <strong>Try it</strong> box, the API, MCP or a schedule).
          </Empty>
        )
        : (
          <div className="table-wrap" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Task</th>
                  <th scope="col">Agent</th>
                  <th scope="col">Status</th>
                  <th scope="col">User</th>
                  <th scope="col">Source</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {tasks.items.map((t) => (
                  <tr key={t.id}>
                    <td>
                      <Link to={`/tasks/${t.id}`}>{t.id.slice(0, 8)}</Link>
                    </td>
                    <td>{agentName(t.agent_id)}</td>
                    <td>
                      <Status value={t.status} />
                    </td>
                    <td>{t.user.email}</td>
                    <td>{t.source}</td>
                    <td>{time(t.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      <MoreButton query={tasks} />
    </section>
  )
}
