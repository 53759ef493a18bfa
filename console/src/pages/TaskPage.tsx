import { useMutation, useQuery } from "@tanstack/react-query"
import { api, ok, queryClient, roleAtLeast } from "../api.js"
import { Link } from "../router.js"
import { useSession } from "../session.js"
import { ended, ThreadView, useTaskEvents } from "../thread.js"
import { ErrorNote, Loading, PageTitle, Status, time, usd } from "../ui.js"
import { ApprovalCard } from "./Approvals.js"

/** One task: its thread (live until it ends), its model calls with tokens and cost, and pending approvals. */
export default function TaskPage({ id }: { readonly id: string }) {
  const session = useSession()
  const path = { task_id: id }
  const task = useQuery({
    queryKey: ["tasks", id],
    queryFn: () => ok(api.GET("/v1/tasks/{task_id}", { params: { path } })),
    // the event stream refreshes it as it happens; polling only backs the stream up
    refetchInterval: (q) => ended(q.state.data?.status) ? false : 3000
  })
  const live = !ended(task.data?.status)
  const thread = useQuery({
    // keyed by the status too: the thread is read once more when the task ends
    queryKey: ["thread", id, task.data?.status],
    queryFn: () => ok(api.GET("/v1/tasks/{task_id}/thread", { params: { path } })),
    refetchInterval: live ? 3000 : false
  })
  useTaskEvents(id, task.data !== undefined && live)
  const usage = useQuery({
    queryKey: ["llm_usage", id, task.data?.status],
    queryFn: () => ok(api.GET("/v1/tasks/{task_id}/llm_usage", { params: { path } }))
  })
  const isAdmin = roleAtLeast(session.role, "admin")
  const approvals = useQuery({
    queryKey: ["approvals", "task", id, task.data?.status],
    enabled: isAdmin,
    queryFn: () => ok(api.GET("/v1/approvals", { params: { query: { task_id: id, status: "pending" } } }))
  })
  const cancel = useMutation({
    mutationFn: () => ok(api.POST("/v1/tasks/{task_id}/cancel", { params: { path } })),
    // a task that ended meanwhile is a 409: show it as it ended
    onSettled: () => queryClient.invalidateQueries({ queryKey: ["tasks", id] })
  })
  if (task.isPending) return <Loading />
  if (task.data === undefined) {
    return (
      <section>
        <PageTitle>Task</PageTitle>
        <ErrorNote error={task.error} />
      </section>
    )
  }
  const t = task.data
  return (
    <section>
      <PageTitle
        actions={live && (
          <button
            type="button"
            className="danger"
            onClick={() => cancel.mutate()}
            disabled={cancel.isPending}
          >
            Cancel task
          </button>
        )}
      >
        {`Task ${t.id.slice(0, 8)}`}
      </PageTitle>
      <p>
        <Status value={t.status} />
        {t.error_code !== null && <code title="error_code">{` ${t.error_code}`}</code>} · agent{" "}
        <Link to={`/agents/${t.agent_id}`}>{t.agent_id.slice(0, 8)}</Link> · for {t.user.email} · {t.source} ·{" "}
        {time(t.created_at)}
        {t.finished_at !== null && ` → ${time(t.finished_at)}`}
      </p>
      <ErrorNote error={cancel.error} />
      {(approvals.data?.items.length ?? 0) > 0 && (
        <section aria-labelledby="pending">
          <h2 id="pending">Waiting for approval</h2>
          {approvals.data!.items.map((a) => <ApprovalCard key={a.id} approval={a} />)}
        </section>
      )}
      <h2>Thread</h2>
      <ErrorNote error={thread.error} />
      {thread.data && <ThreadView events={thread.data.events} {...(usage.data ? { usage: usage.data.calls } : {})} />}
      <h2>Model calls</h2>
      <ErrorNote error={usage.error} />
      {usage.data &&
        (usage.data.calls.length === 0 ?
          <p className="muted">No model calls.</p> :
          (
            <div className="table-wrap" tabIndex={0}>
              <table>
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">Model</th>
                    <th scope="col">Input tokens</th>
                    <th scope="col">Output tokens</th>
                    <th scope="col">Cached</th>
                    <th scope="col">Cost</th>
                  </tr>
                </thead>
                <tbody>
                  {usage.data.calls.map((c) => (
                    <tr key={c.seq}>
                      <td>{c.seq}</td>
                      <td>{c.provider} {c.model}</td>
                      <td>{c.input_tokens}</td>
                      <td>{c.output_tokens}</td>
                      <td>{c.cached_tokens}</td>
                      <td>{usd(c.cost_usd)}</td>
                    </tr>
                  ))}
                </tbody>
                <tfoot>
                  <tr>
                    <th scope="row" colSpan={2}>Total</th>
                    <td>{usage.data.totals.input_tokens}</td>
                    <td>{usage.data.totals.output_tokens}</td>
                    <td>{usage.data.totals.cached_tokens}</td>
                    <td>{usd(usage.data.totals.cost_usd)}</td>
                  </tr>
                </tfoot>
              </table>
            </div>
          ))}
    </section>
  )
}
