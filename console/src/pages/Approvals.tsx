import { useMutation } from "@tanstack/react-query"
import { useState } from "react"
import { api, ok, queryClient, type Schemas } from "../api.js"
import { Link, navigate, useLocation } from "../router.js"
import { Empty, ErrorNote, Field, Json, Loading, MoreButton, PageTitle, Status, time, usePaged } from "../ui.js"

type ApprovalStatus = Schemas["Approval"]["status"]

/** The Admins' inbox of tool calls waiting for a decision. */
export default function Approvals() {
  const { query } = useLocation()
  const status = (query.get("status") ?? "pending") as ApprovalStatus
  const approvals = usePaged(
    ["approvals", "list", status],
    (cursor) =>
      ok(api.GET("/v1/approvals", {
        params: { query: { status, limit: 25, ...(cursor !== undefined ? { cursor } : {}) } }
      })),
    { refetchInterval: status === "pending" ? 5000 : false }
  )
  return (
    <section>
      <PageTitle>Approvals</PageTitle>
      <Field label="Show">
        {(p) => (
          <select {...p} value={status} onChange={(e) => navigate(`/approvals?status=${e.target.value}`)}>
            <option value="pending">Pending</option>
            <option value="approved">Approved</option>
            <option value="rejected">Rejected</option>
            <option value="expired">Expired</option>
          </select>
        )}
      </Field>
      <ErrorNote error={approvals.error} />
      {approvals.data === undefined ? approvals.isPending && <Loading /> : approvals.items.length === 0
        ? (
          <Empty title={status === "pending" ? "Nothing waits for approval." : `No ${status} approvals.`}>
            A tool call waits here when a skill's action requires approval (Skills → an action's "requires approval").
          </Empty>
        )
        : approvals.items.map((a) => <ApprovalCard key={a.id} approval={a} />)}
      <MoreButton query={approvals} />
    </section>
  )
}

export const ApprovalCard = ({ approval: a }: { readonly approval: Schemas["Approval"] }) => {
  const [reason, setReason] = useState("")
  const decide = useMutation({
    mutationFn: (decision: "approve" | "reject") =>
      ok(api.POST(`/v1/approvals/{approval_id}/${decision}`, {
        params: { path: { approval_id: a.id } },
        body: reason.trim() === "" ? {} : { reason: reason.trim() }
      })),
    onSuccess: () => {
      queryClient.invalidateQueries({ queryKey: ["approvals"] })
      queryClient.invalidateQueries({ queryKey: ["tasks", a.task_id] })
      queryClient.invalidateQueries({ queryKey: ["thread", a.task_id] })
    }
  })
  return (
    <article className="card" aria-label={`Approval of ${a.tool}`}>
      <h3>
        <code>{a.tool}</code> <Status value={a.status} />
      </h3>
      <p className="muted">
        {a.task_id !== null && (
          <>
            Task <Link to={`/tasks/${a.task_id}`}>{a.task_id.slice(0, 8)}</Link> ·{" "}
          </>
        )}
        requested {time(a.requested_at)} · expires {time(a.expires_at)}
      </p>
      <Json value={a.arguments} />
      {a.status === "pending"
        ? (
          <div className="decide">
            <Field label="Reason (optional)">
              {(p) => (
                <input
                  {...p}
                  value={reason}
                  onChange={(e) => setReason(e.target.value)}
                />
              )}
            </Field>
            <button
              type="button"
              className="primary"
              disabled={decide.isPending}
              onClick={() => decide.mutate("approve")}
            >
              Approve
            </button>
            <button
              type="button"
              className="danger"
              disabled={decide.isPending}
              onClick={() => decide.mutate("reject")}
            >
              Reject
            </button>
          </div>
        )
        : a.reason !== null && <p>Reason: {a.reason}</p>}
      <ErrorNote error={decide.error} />
    </article>
  )
}
