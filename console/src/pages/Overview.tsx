import { useQuery } from "@tanstack/react-query"
import { api, ok, type Schemas } from "../api.js"
import { Link } from "../router.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Loading, PageTitle, Status, time, usd } from "../ui.js"

/** Usage of the last 30 days and the latest tasks. */
export default function Overview() {
  const session = useSession()
  const from = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10)
  const usage = useQuery({
    queryKey: ["usage", from],
    // by day: the API rounds `from` down to its bucket's start, and a month bucket would reach back to the 1st
    // of last month. JSON unless format=csv is asked for.
    queryFn: async () =>
      (await ok(api.GET("/v1/usage", { params: { query: { from, bucket: "day" } } }))) as Schemas["UsageReport"]
  })
  const tasks = useQuery({
    queryKey: ["tasks", "recent"],
    queryFn: () => ok(api.GET("/v1/tasks", { params: { query: { limit: 10 } } }))
  })
  const totals = (usage.data?.rows ?? []).reduce(
    (t, r) => ({
      calls: t.calls + r.model_calls,
      tokens: t.tokens + r.input_tokens + r.output_tokens,
      cost: t.cost + r.cost_usd,
      completed: t.completed + r.tasks_completed,
      failed: t.failed + r.tasks_error
    }),
    { calls: 0, tokens: 0, cost: 0, completed: 0, failed: 0 }
  )
  return (
    <section>
      <PageTitle>Overview</PageTitle>
      <p className="muted">Signed in as {session.user.email} in {session.organization.name}.</p>
      <h2>Last 30 days</h2>
      <ErrorNote error={usage.error} />
      {usage.data === undefined ? usage.isPending && <Loading /> : (
        <dl className="stats">
          <div>
            <dt>Tasks completed</dt>
            <dd>{totals.completed}</dd>
          </div>
          <div>
            <dt>Tasks failed</dt>
            <dd>{totals.failed}</dd>
          </div>
          <div>
            <dt>Model calls</dt>
            <dd>{totals.calls}</dd>
          </div>
          <div>
            <dt>Tokens</dt>
            <dd>{totals.tokens}</dd>
          </div>
          <div>
            <dt>Cost</dt>
            <dd>{usd(totals.cost)}</dd>
          </div>
        </dl>
      )}
      {(usage.data?.budgets.length ?? 0) > 0 && (
        <>
          <h2>Budgets</h2>
          <ul>
            {usage.data!.budgets.map((b) => (
              <li key={b.agent_id}>
                {b.agent_name}: {usd(b.spent_usd)} of {usd(b.limit_usd)} this {b.period}
                {b.exhausted && <strong>(spent)</strong>}
              </li>
            ))}
          </ul>
        </>
      )}
      <h2>Recent tasks</h2>
      <ErrorNote error={tasks.error} />
      {tasks.data === undefined ? tasks.isPending && <Loading /> : tasks.data?.items.length === 0
        ? (
          <Empty title="No tasks yet.">
            Create an agent under <Link to="/agents">Agents</Link> and talk to it with <strong>Try it</strong>.
          </Empty>
        )
        : (
          <div className="table-wrap" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Task</th>
                  <th scope="col">Status</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {tasks.data?.items.map((t) => (
                  <tr key={t.id}>
                    <td>
                      <Link to={`/tasks/${t.id}`}>{t.result?.slice(0, 60) || t.id.slice(0, 8)}</Link>
                    </td>
                    <td>
                      <Status value={t.status} />
                    </td>
                    <td>{time(t.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
    </section>
  )
}
