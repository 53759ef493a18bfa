import { useMutation, useQuery } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, type Role, roleAtLeast, roleNames, type Schemas } from "../api.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Field, Loading, ShowOnce, time } from "../ui.js"

/** API keys: create (the secret shown once, to copy), list, revoke. */
export const ApiKeys = () => {
  const session = useSession()
  const isAdmin = roleAtLeast(session.role, "admin")
  const [name, setName] = useState("")
  const [kind, setKind] = useState<"personal" | "organization">("personal")
  const [role, setRole] = useState<Role>("member")
  const [error, setError] = useState<string | undefined>()
  const keys = useQuery({ queryKey: ["api-keys"], queryFn: () => ok(api.GET("/v1/api-keys")) })
  const create = useMutation({
    mutationFn: (body: Schemas["CreateApiKey"]) => ok(api.POST("/v1/api-keys", { body })),
    onSuccess: () => {
      setName("")
      queryClient.invalidateQueries({ queryKey: ["api-keys"] })
    }
  })
  const revoke = useMutation({
    mutationFn: (keyId: string) => ok(api.DELETE("/v1/api-keys/{key_id}", { params: { path: { key_id: keyId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["api-keys"] })
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (name.trim() === "") return setError("Name the key after where it is used, e.g. ci-pipeline.")
    setError(undefined)
    create.mutate({ name: name.trim(), kind, ...(kind === "organization" ? { role } : {}) })
  }
  return (
    <section aria-labelledby="keys">
      <h2 id="keys">API keys</h2>
      <form onSubmit={submit} noValidate className="row" aria-label="Create an API key">
        <Field label="Key name" error={error}>
          {(p) => <input {...p} value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        {isAdmin && (
          <Field label="Kind">
            {(p) => (
              <select {...p} value={kind} onChange={(e) => setKind(e.target.value as typeof kind)}>
                <option value="personal">Personal (acts as me)</option>
                <option value="organization">Organization (a service)</option>
              </select>
            )}
          </Field>
        )}
        {kind === "organization" && (
          <Field label="Key role">
            {(p) => (
              <select {...p} value={role} onChange={(e) => setRole(e.target.value as Role)}>
                {(["member", "builder", "admin"] as const).filter((r) => roleAtLeast(session.role, r)).map((r) => (
                  <option key={r} value={r}>{roleNames[r]}</option>
                ))}
              </select>
            )}
          </Field>
        )}
        <button type="submit" className="primary" disabled={create.isPending}>Create key</button>
      </form>
      <ErrorNote error={create.error ?? revoke.error ?? keys.error} />
      {create.data && <ShowOnce label={`Key ${create.data.name}`} value={create.data.api_key} />}
      {keys.data === undefined ? keys.isPending && <Loading /> : keys.data?.items.length === 0
        ? (
          <Empty title="No API keys yet.">
            Create one to call the API from scripts: send it as the x-api-key header.
          </Empty>
        )
        : (
          <div className="table-wrap" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Prefix</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Role</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.data?.items.map((k) => (
                  <tr key={k.id}>
                    <td>{k.name}</td>
                    <td>
                      <code>{k.prefix}</code>
                    </td>
                    <td>{k.kind}</td>
                    <td>{roleNames[k.role]}</td>
                    <td>{time(k.last_used_at)}</td>
                    <td>
                      {k.revoked_at !== null ? `revoked ${time(k.revoked_at)}` : roleAtLeast(session.role, k.role) && (
                        // a key above one's role is not one's to revoke (the API answers 403)
                        <button
                          type="button"
                          className="danger"
                          aria-label={`Revoke ${k.name}`}
                          onClick={() =>
                            window.confirm(`Revoke the key ${k.name}? Calls with it stop at once.`) &&
                            revoke.mutate(k.id)}
                        >
                          Revoke
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

/** The MCP clients someone authorized (OAuth grants), with revoke. */
export const McpAuthorizations = () => {
  const list = useQuery({ queryKey: ["mcp-authorizations"], queryFn: () => ok(api.GET("/v1/oauth/authorizations")) })
  const revoke = useMutation({
    mutationFn: (id: string) =>
      ok(api.DELETE("/v1/oauth/authorizations/{authorization_id}", { params: { path: { authorization_id: id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["mcp-authorizations"] })
  })
  return (
    <section aria-labelledby="mcp">
      <h2 id="mcp">MCP authorizations</h2>
      <ErrorNote error={list.error ?? revoke.error} />
      {list.data === undefined ? list.isPending && <Loading /> : list.data?.items.length === 0
        ? (
          <Empty title="No MCP client is authorized.">
            An MCP client asks for access at /mcp/ and you approve it there.
          </Empty>
        )
        : (
          <ul className="plain">
            {list.data?.items.map((a) => (
              <li key={a.id} className="card">
                <strong>{a.client_name ?? a.client_id}</strong> · {a.scopes.join(" ")} · since {time(a.created_at)}{" "}
                · last used {time(a.last_used_at)}
                {a.revoked_at === null
                  ? (
                    <button type="button" className="danger" onClick={() => revoke.mutate(a.id)}>
                      Revoke
                    </button>
                  )
                  : ` · revoked ${time(a.revoked_at)}`}
              </li>
            ))}
          </ul>
        )}
    </section>
  )
}
