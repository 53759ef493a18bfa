import { useMutation } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, type Role, roleNames, type Schemas } from "../api.js"
import { Empty, ErrorNote, Field, Loading, MoreButton, usePaged } from "../ui.js"

/** Groups: default role and default agents of their members (Admins). */
export default function Groups() {
  const [name, setName] = useState("")
  const [description, setDescription] = useState("")
  const [role, setRole] = useState<Role | "">("")
  const [error, setError] = useState<string | undefined>()
  const groups = usePaged(
    ["groups"],
    (cursor) =>
      ok(api.GET("/v1/groups", { params: { query: { limit: 25, ...(cursor !== undefined ? { cursor } : {}) } } }))
  )
  const create = useMutation({
    mutationFn: (body: Schemas["CreateGroup"]) => ok(api.POST("/v1/groups", { body })),
    onSuccess: () => {
      setName("")
      setDescription("")
      queryClient.invalidateQueries({ queryKey: ["groups"] })
    }
  })
  const remove = useMutation({
    mutationFn: (id: string) => ok(api.DELETE("/v1/groups/{group_id}", { params: { path: { group_id: id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["groups"] })
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (name.trim() === "") return setError("Name the group, e.g. Support team.")
    setError(undefined)
    create.mutate({ name: name.trim(), description, default_role: role === "" ? null : role })
  }
  return (
    <section aria-labelledby="groups">
      <h2 id="groups">Groups</h2>
      <form onSubmit={submit} noValidate className="row" aria-label="Create a group">
        <Field label="Group name" error={error}>
          {(p) => <input {...p} value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <Field label="Description">
          {(p) => <input {...p} value={description} onChange={(e) => setDescription(e.target.value)} />}
        </Field>
        <Field label="Default role">
          {(p) => (
            <select {...p} value={role} onChange={(e) => setRole(e.target.value as Role | "")}>
              <option value="">None</option>
              {(["member", "builder", "admin"] as const).map((r) => <option key={r} value={r}>{roleNames[r]}</option>)}
            </select>
          )}
        </Field>
        <button type="submit" className="primary" disabled={create.isPending}>Create group</button>
      </form>
      <ErrorNote error={create.error ?? remove.error ?? groups.error} />
      {groups.data === undefined ? groups.isPending && <Loading /> : groups.items.length === 0
        ? <Empty title="No groups yet.">Groups give their members a default role and default agents.</Empty>
        : (
          <ul className="plain">
            {groups.items.map((g) => (
              <li key={g.id} className="card">
                <strong>{g.name}</strong> · {g.member_count} member(s)
                {g.default_role !== null && ` · default role ${roleNames[g.default_role]}`}
                {g.agent_ids.length > 0 && ` · ${g.agent_ids.length} default agent(s)`}
                <p className="muted">{g.description}</p>
                <button
                  type="button"
                  className="danger"
                  aria-label={`Delete group ${g.name}`}
                  onClick={() => remove.mutate(g.id)}
                >
                  Delete
                </button>
              </li>
            ))}
          </ul>
        )}
      <MoreButton query={groups} />
    </section>
  )
}
