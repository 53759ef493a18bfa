import { useMutation, useQuery } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, roleAtLeast, type Schemas } from "../api.js"
import { Link, useLocation } from "../router.js"
import { type JsonSchema, SchemaForm } from "../SchemaForm.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Field, Json, Loading, PageTitle, Status } from "../ui.js"

type AuthType = Schemas["Credentials"]["type"]

/**
 * The provider's consent page, asked to come back to this connector's page in the console (the node accepts
 * only a /console path of its own origin as `return_to`).
 */
const consentWithReturn = (url: string, connectorId: string) => {
  const start = new URL(url, window.location.origin)
  start.searchParams.set("return_to", `/console/connectors/${encodeURIComponent(connectorId)}`)
  return start.toString()
}

/** A connector: its connections (connect with each credential type), its operations, and trying one. */
export default function ConnectorPage({ id }: { readonly id: string }) {
  const connector = useQuery({
    queryKey: ["connectors", id],
    queryFn: () => ok(api.GET("/v1/tools/connectors/{connector_id}", { params: { path: { connector_id: id } } }))
  })
  const operations = useQuery({
    queryKey: ["operations", id],
    queryFn: () =>
      ok(api.GET("/v1/tools/connectors/{connector_id}/operations", { params: { path: { connector_id: id } } }))
  })
  if (connector.isPending) return <Loading />
  if (connector.data === undefined) {
    return (
      <section>
        <PageTitle>Connector</PageTitle>
        <ErrorNote error={connector.error} />
      </section>
    )
  }
  const c = connector.data
  return (
    <section>
      <PageTitle>{c.name}</PageTitle>
      <p className="muted">
        <Link to="/connectors">Connectors</Link> · {c.total_operations} operations · {c.server_url ?? "no server URL"}
      </p>
      <p>{c.description}</p>
      <Connections connector={c} />
      <h2>Operations</h2>
      <ErrorNote error={operations.error} />
      {operations.data && (
        <div className="table-wrap" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Operation</th>
                <th scope="col">Method and path</th>
                <th scope="col">Description</th>
              </tr>
            </thead>
            <tbody>
              {operations.data.map((op) => (
                <tr key={op.id}>
                  <td>{op.pretty_name || op.id}</td>
                  <td>
                    <code>{op.method.toUpperCase()} {op.path}</code>
                  </td>
                  <td>{op.pretty_description}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {operations.data && c.connections.length > 0 && <TryOperation connector={c} operations={operations.data} />}
    </section>
  )
}

const Connections = ({ connector: c }: { readonly connector: Schemas["Connector"] }) => {
  const session = useSession()
  const [adding, setAdding] = useState(false)
  const returned = useLocation().query.get("oauth") === "connected"
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["connectors"] })
  const remove = useMutation({
    mutationFn: (connectionId: string) =>
      ok(api.DELETE("/v1/tools/connectors/{connector_id}/connections/{connection_id}", {
        params: { path: { connector_id: c.id, connection_id: connectionId } }
      })),
    onSuccess: refresh
  })
  const authorize = useMutation({
    mutationFn: (connectionId: string) =>
      ok(api.POST("/v1/tools/connections/{connection_id}/authorize", {
        params: { path: { connection_id: connectionId } }
      })),
    onSuccess: (conn) => {
      if (conn.connector_page_url !== undefined) {
        window.location.assign(consentWithReturn(conn.connector_page_url, c.id))
      }
    }
  })
  return (
    <section aria-labelledby="connections">
      <div className="page-title">
        <h2 id="connections">Connections</h2>
        {!adding && <button type="button" onClick={() => setAdding(true)}>New connection</button>}
      </div>
      {adding && <NewConnection connector={c} onDone={() => setAdding(false)} />}
      {returned && (
        <p className="notice" role="status">
          Back from the provider's consent: the connection is authorized (its status is below).
        </p>
      )}
      <ErrorNote error={remove.error ?? authorize.error} />
      {c.connections.length === 0
        ? (
          <Empty title="Not connected yet.">
            Add a connection with the credentials this API takes ({c.auth_types.join(", ") || "none"}); agents then call
            its operations through it.
          </Empty>
        )
        : (
          <ul className="plain">
            {c.connections.map((conn) => (
              <li key={conn.id} className="card">
                <strong>{conn.name}</strong> <Status value={conn.status} /> · {conn.auth_type} · {conn.access_scope}
                {" "}
                <code className="muted">{conn.id}</code>
                <div className="actions">
                  {conn.auth_type === "oauth2" && conn.status !== "active" && (
                    <button
                      type="button"
                      onClick={() => authorize.mutate(conn.id)}
                    >
                      Authorize
                    </button>
                  )}
                  {(conn.owner_user_id === session.user.id || roleAtLeast(session.role, "builder")) && (
                    <button
                      type="button"
                      className="danger"
                      aria-label={`Delete connection ${conn.name}`}
                      onClick={() => window.confirm(`Delete the connection ${conn.name}?`) && remove.mutate(conn.id)}
                    >
                      Delete
                    </button>
                  )}
                </div>
              </li>
            ))}
          </ul>
        )}
    </section>
  )
}

const NewConnection = (
  { connector: c, onDone }: { readonly connector: Schemas["Connector"]; readonly onDone: () => void }
) => {
  const session = useSession()
  const [name, setName] = useState("")
  const [type, setType] = useState<AuthType>(c.auth_types[0] ?? "none")
  const [scope, setScope] = useState<"organizational" | "personal">(
    roleAtLeast(session.role, "builder") ? "organizational" : "personal"
  )
  const [f, setF] = useState<Record<string, string>>({})
  const [errors, setErrors] = useState<Record<string, string>>({})
  const create = useMutation({
    mutationFn: (body: Schemas["CreateConnection"]) =>
      ok(api.POST("/v1/tools/connectors/{connector_id}/connections", {
        params: { path: { connector_id: c.id } },
        body
      })),
    onSuccess: (conn) => {
      queryClient.invalidateQueries({ queryKey: ["connectors"] })
      // OAuth2: the provider's consent page, which comes back through the node's callback to this page
      if (conn.connector_page_url !== undefined) {
        window.location.assign(consentWithReturn(conn.connector_page_url, c.id))
      } else onDone()
    }
  })
  const need: Record<AuthType, ReadonlyArray<[string, string]>> = {
    none: [],
    api_key: [["value", "API key"]],
    bearer: [["token", "Token"]],
    basic: [["username", "Username"], ["password", "Password"]],
    oauth2: [["client_id", "Client ID"], ["client_secret", "Client secret"], ["scopes", "Scopes"]]
  }
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const found: Record<string, string> = {}
    if (name.trim() === "") found.name = "Name the connection, e.g. production."
    for (const [key, label] of need[type]) {
      if (key !== "scopes" && (f[key] ?? "").trim() === "") found[key] = `${label} is required.`
    }
    setErrors(found)
    if (Object.keys(found).length > 0) return
    const v = (k: string) => (f[k] ?? "").trim()
    const credentials: Schemas["Credentials"] = type === "api_key"
      ? { type, value: v("value") }
      : type === "bearer"
      ? { type, token: v("token") }
      : type === "basic"
      ? { type, username: v("username"), password: f.password ?? "" }
      : type === "oauth2"
      ? {
        type,
        client_id: v("client_id"),
        client_secret: v("client_secret"),
        scopes: v("scopes").split(/[\s,]+/).filter(Boolean)
      }
      : { type: "none" }
    create.mutate({ name: name.trim(), access_scope: scope, credentials })
  }
  return (
    <form onSubmit={submit} noValidate className="form panel" aria-label="New connection">
      <Field label="Connection name" error={errors.name}>
        {(p) => <input {...p} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <div className="row">
        <Field label="Credential type">
          {(p) => (
            <select {...p} value={type} onChange={(e) => setType(e.target.value as AuthType)}>
              {(["none", "api_key", "bearer", "basic", "oauth2"] as const).map((t) => (
                <option key={t} value={t}>{t}</option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Access">
          {(p) => (
            <select {...p} value={scope} onChange={(e) => setScope(e.target.value as typeof scope)}>
              <option value="organizational">Organizational (everyone's agents)</option>
              <option value="personal">Personal (mine)</option>
            </select>
          )}
        </Field>
      </div>
      {need[type].map(([key, label]) => (
        <Field
          key={key}
          label={label}
          error={errors[key]}
          {...(key === "scopes" ? { hint: "Space-separated, optional" } : {})}
        >
          {(p) => (
            <input
              {...p}
              type={key === "password" || key === "client_secret" || key === "value" || key === "token"
                ? "password"
                : "text"}
              autoComplete="off"
              value={f[key] ?? ""}
              onChange={(e) => setF({ ...f, [key]: e.target.value })}
            />
          )}
        </Field>
      ))}
      <ErrorNote error={create.error} />
      <button type="submit" className="primary" disabled={create.isPending}>
        {type === "oauth2" ? "Connect and authorize" : "Connect"}
      </button>
      <button type="button" onClick={onDone}>Cancel</button>
    </form>
  )
}

/** Calls one operation through a connection, with a form made from the operation's input schema. */
const TryOperation = ({ connector: c, operations }: {
  readonly connector: Schemas["Connector"]
  readonly operations: ReadonlyArray<Schemas["Operation"]>
}) => {
  const [connectionId, setConnectionId] = useState(c.connections[0]?.id ?? "")
  const [operationId, setOperationId] = useState(operations[0]?.operationId ?? "")
  const path = { connector_id: c.id, connection_id: connectionId, operation_id: operationId }
  const schema = useQuery({
    queryKey: ["operation-schema", c.id, connectionId, operationId],
    enabled: connectionId !== "" && operationId !== "",
    queryFn: () =>
      ok(api.GET("/v1/tools/connectors/{connector_id}/connections/{connection_id}/{operation_id}/schema", {
        params: { path }
      }))
  })
  const invoke = useMutation({
    mutationFn: async (body: Schemas["InvokeOperation"]) => {
      const r = await api.POST("/v1/tools/connectors/{connector_id}/connections/{connection_id}/{operation_id}", {
        params: { path },
        body,
        parseAs: "text"
      })
      const text = (r.data ?? r.error ?? "") as string
      let parsed: unknown = text
      try {
        parsed = JSON.parse(text)
      } catch {
        // not JSON: shown as text
      }
      return { status: r.response.status, own: r.response.headers.get("x-switchyard-error") !== null, body: parsed }
    }
  })
  return (
    <section aria-labelledby="try-operation" className="panel">
      <h2 id="try-operation">Try an operation</h2>
      <div className="row">
        <Field label="Connection">
          {(p) => (
            <select {...p} value={connectionId} onChange={(e) => setConnectionId(e.target.value)}>
              {c.connections.map((conn) => <option key={conn.id} value={conn.id}>{conn.name}</option>)}
            </select>
          )}
        </Field>
        <Field label="Operation">
          {(p) => (
            <select
              {...p}
              value={operationId}
              onChange={(e) => {
                setOperationId(e.target.value)
                invoke.reset()
              }}
            >
              {operations.map((op) => (
                <option key={op.id} value={op.operationId}>{op.pretty_name} ({op.operationId})</option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <ErrorNote error={schema.error} />
      {schema.data && (
        <SchemaForm
          key={`${connectionId}/${operationId}`}
          schema={schema.data.input as JsonSchema}
          submitLabel="Call operation"
          pending={invoke.isPending}
          onSubmit={(value) => invoke.mutate(value as Schemas["InvokeOperation"])}
        />
      )}
      <ErrorNote error={invoke.error} />
      {invoke.data && (
        <div role="status" aria-label="Operation result">
          <p>
            {invoke.data.own ? "Switchyard refused the call" : "The API answered"} with HTTP {invoke.data.status}
          </p>
          <Json value={invoke.data.body} />
        </div>
      )}
    </section>
  )
}
