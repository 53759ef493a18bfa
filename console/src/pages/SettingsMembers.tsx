import { useMutation, useQuery } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, type Role, roleAtLeast, roleNames, type Schemas } from "../api.js"
import { useSession } from "../session.js"
import { ErrorNote, Field, Loading, time } from "../ui.js"

const ROLES: ReadonlyArray<Role> = ["member", "builder", "admin", "super_admin"]

/** Members and their roles (Admins). */
export default function Members() {
  const session = useSession()
  // nobody grants a role above their own nor changes or removes a member above them (the API refuses it)
  const grantable = ROLES.filter((r) => roleAtLeast(session.role, r))
  const [email, setEmail] = useState("")
  const [role, setRole] = useState<Role>("member")
  const [error, setError] = useState<string | undefined>()
  const members = useQuery({ queryKey: ["members"], queryFn: () => ok(api.GET("/v1/members")) })
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["members"] })
  const add = useMutation({
    mutationFn: (body: Schemas["CreateMember"]) => ok(api.POST("/v1/members", { body })),
    onSuccess: () => {
      setEmail("")
      refresh()
    }
  })
  const change = useMutation({
    mutationFn: ({ userId, role }: { userId: string; role: Role }) =>
      ok(api.PATCH("/v1/members/{user_id}", { params: { path: { user_id: userId } }, body: { role } })),
    onSuccess: refresh
  })
  const remove = useMutation({
    mutationFn: (userId: string) => ok(api.DELETE("/v1/members/{user_id}", { params: { path: { user_id: userId } } })),
    onSuccess: refresh
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (!/^[^\s@]+@[^\s@]+$/.test(email.trim())) return setError("Enter the new member's e-mail address.")
    setError(undefined)
    add.mutate({ email: email.trim(), role })
  }
  return (
    <section aria-labelledby="members">
      <h2 id="members">Members</h2>
      <form onSubmit={submit} noValidate className="row" aria-label="Add a member">
        <Field label="Member email" error={error}>
          {(p) => <input {...p} type="email" value={email} onChange={(e) => setEmail(e.target.value)} />}
        </Field>
        <Field label="Role">
          {(p) => (
            <select {...p} value={role} onChange={(e) => setRole(e.target.value as Role)}>
              {grantable.map((r) => <option key={r} value={r}>{roleNames[r]}</option>)}
            </select>
          )}
        </Field>
        <button type="submit" className="primary" disabled={add.isPending}>Add member</button>
      </form>
      <ErrorNote error={add.error ?? change.error ?? remove.error ?? members.error} />
      {members.data === undefined ? members.isPending && <Loading /> : (
        <div className="table-wrap" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Since</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {members.data?.items.map((m) => (
                <tr key={m.user.id}>
                  <td>{m.user.email}</td>
                  <td>{m.user.name ?? "—"}</td>
                  <td>
                    {roleAtLeast(session.role, m.role)
                      ? (
                        <label>
                          <span className="visually-hidden">Role of {m.user.email}</span>
                          <select
                            value={m.role}
                            onChange={(e) => change.mutate({ userId: m.user.id, role: e.target.value as Role })}
                          >
                            {grantable.map((r) => <option key={r} value={r}>{roleNames[r]}</option>)}
                          </select>
                        </label>
                      )
                      : roleNames[m.role]}
                  </td>
                  <td>{time(m.created_at)}</td>
                  <td>
                    {m.user.id !== session.user.id && roleAtLeast(session.role, m.role) && (
                      <button
                        type="button"
                        className="danger"
                        aria-label={`Remove ${m.user.email}`}
                        onClick={() => window.confirm(`Remove ${m.user.email}?`) && remove.mutate(m.user.id)}
                      >
                        Remove
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}
