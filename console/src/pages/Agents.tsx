import { useMutation, useQuery } from "@tanstack/react-query"
import { useState } from "react"
import { api, ok, queryClient, roleAtLeast, type Schemas } from "../api.js"
import { Link, navigate } from "../router.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Loading, PageTitle, time, usd } from "../ui.js"
import { AgentForm } from "./AgentForm.js"

export default function Agents() {
  const session = useSession()
  const canBuild = roleAtLeast(session.role, "builder")
  const [creating, setCreating] = useState(false)
  const agents = useQuery({ queryKey: ["agents"], queryFn: () => ok(api.GET("/v1/agents")) })
  const create = useMutation({
    mutationFn: (body: Schemas["CreateAgent"]) => ok(api.POST("/v1/agents", { body })),
    onSuccess: (agent) => {
      queryClient.invalidateQueries({ queryKey: ["agents"] })
      navigate(`/agents/${agent.id}`)
    }
  })
  return (
    <section>
      <PageTitle
        actions={canBuild && !creating && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>New agent</button>
        )}
      >
        Agents
      </PageTitle>
      {creating && (
        <section aria-labelledby="new-agent">
          <h2 id="new-agent">New agent</h2>
          <AgentForm
            submitLabel="Create agent"
            onSubmit={(body) => create.mutate(body)}
            pending={create.isPending}
            error={create.error}
          />
          <button type="button" onClick={() => setCreating(false)}>Cancel</button>
        </section>
      )}
      <ErrorNote error={agents.error} />
      {agents.data === undefined ? agents.isPending && <Loading /> : agents.data?.items.length === 0
        ? (
          <Empty title="No agents yet.">
            {canBuild
              ? "Create one with New agent: give it instructions, a model and the tools it may call."
              : "A Builder of your organization creates agents; they appear here."}
          </Empty>
        )
        : (
          <div className="table-wrap" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Model</th>
                  <th scope="col">Tools</th>
                  <th scope="col">Spent</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {agents.data?.items.map((a) => (
                  <tr key={a.id}>
                    <td>
                      <Link to={`/agents/${a.id}`}>{a.name}</Link>
                    </td>
                    <td>{a.model.provider} {a.model.name}</td>
                    <td>{a.skills.reduce((n, s) => n + s.operation_ids.length, 0)}</td>
                    <td>{usd(a.spent_usd)}{a.budget && ` of ${usd(a.budget.limit_usd)}`}</td>
                    <td>{time(a.updated_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
    </section>
  )
}
