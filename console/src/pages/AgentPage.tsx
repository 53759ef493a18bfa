import { useMutation, useQuery } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, roleAtLeast, type Schemas } from "../api.js"
import { Link, navigate } from "../router.js"
import { useSession } from "../session.js"
import { ended, ThreadView, useTaskEvents } from "../thread.js"
import { ErrorNote, Field, Loading, PageTitle, Status, usd } from "../ui.js"
import { AgentAttachments } from "./AgentAttachments.js"
import { AgentForm } from "./AgentForm.js"

// the API's default period is `total`
const budgetPeriod = { day: "a day", month: "a month", total: "in total" } as const

export default function AgentPage({ id }: { readonly id: string }) {
  const session = useSession()
  const [editing, setEditing] = useState(false)
  const agent = useQuery({
    queryKey: ["agents", id],
    queryFn: () => ok(api.GET("/v1/agents/{agent_id}", { params: { path: { agent_id: id } } }))
  })
  const update = useMutation({
    mutationFn: (body: Schemas["UpdateAgent"]) =>
      ok(api.PATCH("/v1/agents/{agent_id}", { params: { path: { agent_id: id } }, body })),
    onSuccess: (a) => {
      queryClient.setQueryData(["agents", id], a)
      queryClient.invalidateQueries({ queryKey: ["agents"], exact: true })
      setEditing(false)
    }
  })
  const remove = useMutation({
    mutationFn: () => ok(api.DELETE("/v1/agents/{agent_id}", { params: { path: { agent_id: id } } })),
    onSuccess: () => {
      queryClient.invalidateQueries({ queryKey: ["agents"] })
      navigate("/agents")
    }
  })
  if (agent.isPending) return <Loading />
  if (agent.data === undefined) {
    return (
      <section>
        <PageTitle>Agent</PageTitle>
        <ErrorNote error={agent.error} />
      </section>
    )
  }
  const a = agent.data
  const canBuild = roleAtLeast(session.role, "builder")
  return (
    <section>
      <PageTitle
        actions={canBuild && (
          <div className="actions">
            <button type="button" onClick={() => setEditing(!editing)}>{editing ? "Close editor" : "Edit"}</button>
            <button
              type="button"
              className="danger"
              onClick={() => window.confirm(`Delete the agent ${a.name}?`) && remove.mutate()}
            >
              Delete
            </button>
          </div>
        )}
      >
        {a.name}
      </PageTitle>
      <p className="muted">
        <Link to="/agents">Agents</Link> · {a.model.provider} {a.model.name} · version {a.version} · spent{" "}
        {usd(a.spent_usd)}
        {a.budget && ` of ${usd(a.budget.limit_usd)} ${budgetPeriod[a.budget.period ?? "total"]}`}
      </p>
      <ErrorNote error={remove.error} />
      {editing
        ? (
          <AgentForm
            agent={a}
            submitLabel="Save agent"
            onSubmit={(body) => update.mutate({ ...body, budget: body.budget ?? null })}
            pending={update.isPending}
            error={update.error}
          />
        )
        : (
          <>
            {a.instructions !== "" && <p className="instructions">{a.instructions}</p>}
            <p>
              Tools: {a.skills.flatMap((s) => s.operation_ids).join(", ") ||
                (canBuild ? "none (Edit to choose operations)" : "none")}
            </p>
          </>
        )}
      <AgentAttachments agentId={a.id} canBuild={canBuild} />
      <TryIt agent={a} />
    </section>
  )
}

/** Talks to the agent: each message is a task, whose thread is shown as it grows. */
const TryIt = ({ agent }: { readonly agent: Schemas["Agent"] }) => {
  const session = useSession()
  const [text, setText] = useState("")
  const [problem, setProblem] = useState<string | undefined>()
  const [taskId, setTaskId] = useState<string | undefined>()
  const invoke = useMutation({
    // asynchronous: the pending task as JSON at once (not the event stream a streaming invoke sends)
    mutationFn: async (message: string) =>
      (await ok(api.POST("/v1/agents/{agent_id}/invoke", {
        params: { path: { agent_id: agent.id }, query: { asynchronous: true } },
        body: { input: { text: message, user: { id: session.user.id, email: session.user.email } } }
      }))) as Schemas["TaskAccepted"],
    onSuccess: (task) => {
      setTaskId(task.id)
      setText("")
    }
  })
  const task = useQuery({
    queryKey: ["tasks", taskId],
    enabled: taskId !== undefined,
    queryFn: () => ok(api.GET("/v1/tasks/{task_id}", { params: { path: { task_id: taskId! } } })),
    // the event stream refreshes it as it happens; polling only backs the stream up
    refetchInterval: (q) => ended(q.state.data?.status) ? false : 3000
  })
  const thread = useQuery({
    // keyed by the status too: the thread is read once more when the task ends
    queryKey: ["thread", taskId, task.data?.status],
    enabled: taskId !== undefined,
    queryFn: () => ok(api.GET("/v1/tasks/{task_id}/thread", { params: { path: { task_id: taskId! } } })),
    refetchInterval: () => ended(task.data?.status) ? false : 3000
  })
  useTaskEvents(taskId, task.data !== undefined && !ended(task.data.status))
  const usage = useQuery({
    queryKey: ["llm_usage", taskId, task.data?.status],
    enabled: taskId !== undefined,
    queryFn: () => ok(api.GET("/v1/tasks/{task_id}/llm_usage", { params: { path: { task_id: taskId! } } }))
  })
  const send = (e: FormEvent) => {
    e.preventDefault()
    if (text.trim() === "") return setProblem("Write a message first.")
    setProblem(undefined)
    invoke.mutate(text.trim())
  }
  return (
    <section aria-labelledby="try-it" className="try-it">
      <h2 id="try-it">Try it</h2>
      <form onSubmit={send} noValidate className="chat-form">
        <Field label="Message" error={problem}>
          {(p) => <textarea {...p} rows={2} value={text} onChange={(e) => setText(e.target.value)} />}
        </Field>
        <button type="submit" className="primary" disabled={invoke.isPending}>Send</button>
      </form>
      <ErrorNote error={invoke.error ?? task.error ?? thread.error} />
      {taskId !== undefined && (
        <div aria-live="polite">
          <p>
            Task <Link to={`/tasks/${taskId}`}>{taskId.slice(0, 8)}</Link>{" "}
            {task.data && <Status value={task.data.status} />}
            {task.data?.status === "waiting_approval" && " — waiting for an Admin to approve a tool call"}
          </p>
          {thread.data && (
            <ThreadView events={thread.data.events} {...(usage.data ? { usage: usage.data.calls } : {})} />
          )}
        </div>
      )}
    </section>
  )
}
