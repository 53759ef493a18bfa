import { useMutation, useQuery } from "@tanstack/react-query"
import { useState } from "react"
import { api, ApiError, ok, queryClient, roleAtLeast, type Schemas } from "../api.js"
import { Link, navigate, useLocation } from "../router.js"
import { type JsonSchema, SchemaForm } from "../SchemaForm.js"
import { useSession } from "../session.js"
import { ErrorNote, Json, Loading, PageTitle, time } from "../ui.js"
import { FunctionForm } from "./Functions.js"

/** A custom function: its code and limits, versions, an Invoke form made from its input schema, edit, delete. */
export default function FunctionPage({ id }: { readonly id: string }) {
  const session = useSession()
  const canBuild = roleAtLeast(session.role, "builder")
  const { query } = useLocation()
  const asked = Number(query.get("version") ?? "")
  const version = Number.isInteger(asked) && asked > 0 ? asked : undefined
  const [editing, setEditing] = useState(false)
  const path = { function_id: id }
  const fn = useQuery({
    queryKey: ["functions", id, version ?? "current"],
    queryFn: () =>
      ok(api.GET("/v1/functions/{function_id}", {
        params: { path, ...(version !== undefined ? { query: { version } } : {}) }
      }))
  })
  const remove = useMutation({
    mutationFn: () => ok(api.DELETE("/v1/functions/{function_id}", { params: { path } })),
    onSuccess: () => {
      queryClient.invalidateQueries({ queryKey: ["functions"] })
      navigate("/functions")
    }
  })
  if (fn.isPending) return <Loading />
  if (fn.data === undefined) {
    return (
      <section>
        <PageTitle>Function</PageTitle>
        <ErrorNote error={fn.error} />
        <p>
          <Link to="/functions">All functions</Link>
        </p>
      </section>
    )
  }
  const f = fn.data
  const past = f.version !== f.current_version
  return (
    <section>
      <PageTitle
        actions={canBuild && (
          <div className="actions">
            {!editing && !past && <button type="button" onClick={() => setEditing(true)}>Edit</button>}
            <button
              type="button"
              className="danger"
              aria-label={`Delete function ${f.name}`}
              onClick={() =>
                window.confirm(`Delete the function ${f.name} with all its versions? Agents lose its tool.`) &&
                remove.mutate()}
            >
              Delete
            </button>
          </div>
        )}
      >
        {f.name}
      </PageTitle>
      <p className="muted">
        <Link to="/functions">Functions</Link> · version {f.version}
        {past ? ` (current: ${f.current_version})` : " (current)"} · timeout {f.timeout_ms} ms · memory {f.memory_mb}
        {" "}
        MiB · changed {time(f.updated_at)}
      </p>
      {past && (
        <p className="notice" role="status">
          You are looking at version {f.version}; invoking here runs this version.{" "}
          <Link to={`/functions/${f.id}`}>Show the current version</Link>
        </p>
      )}
      {f.description !== "" && <p>{f.description}</p>}
      <ErrorNote error={remove.error} />
      {editing
        ? <FunctionForm current={f} onDone={() => setEditing(false)} />
        : (
          <>
            <Invoke fn={f} />
            <h2>Code</h2>
            <pre className="json" tabIndex={0} aria-label="Code">{f.code}</pre>
            <h2>Input schema</h2>
            <Json value={f.input_schema} />
          </>
        )}
      <Versions id={f.id} shown={f.version} />
    </section>
  )
}

const Invoke = ({ fn }: { readonly fn: Schemas["CustomFunction"] }) => {
  const invoke = useMutation({
    mutationFn: (input: Record<string, unknown>) =>
      ok(api.POST("/v1/functions/{function_id}/invoke", {
        params: {
          path: { function_id: fn.id },
          ...(fn.version !== fn.current_version ? { query: { version: fn.version } } : {})
        },
        body: { input }
      }))
  })
  const details = invoke.error instanceof ApiError
    ? invoke.error.details as { stack?: unknown; logs?: unknown; issues?: unknown } | undefined
    : undefined
  return (
    <section aria-labelledby="invoke">
      <h2 id="invoke">Invoke</h2>
      <SchemaForm
        key={`${fn.id}-${fn.version}`}
        schema={fn.input_schema as JsonSchema}
        submitLabel="Invoke"
        pending={invoke.isPending}
        noInput="This function's input schema asks for no fields: it runs with {}."
        onSubmit={(input) => invoke.mutate(input)}
      />
      <ErrorNote error={invoke.error} />
      {details !== undefined && (details.stack !== undefined || details.logs !== undefined) && (
        <div aria-label="Error details" role="group">
          {Array.isArray(details.stack) && details.stack.length > 0 && (
            <>
              <h3>Stack</h3>
              <pre className="json" tabIndex={0}>{details.stack.join("\n")}</pre>
            </>
          )}
          {Array.isArray(details.logs) && details.logs.length > 0 && (
            <>
              <h3>Logs</h3>
              <pre className="json" tabIndex={0}>{details.logs.join("\n")}</pre>
            </>
          )}
        </div>
      )}
      {invoke.data !== undefined && (
        <div role="status" aria-label="Invocation result" className="panel">
          <p>
            Ran version {invoke.data.version} in {invoke.data.duration_ms.toFixed(1)} ms.
          </p>
          <h3>Output</h3>
          <Json value={invoke.data.output} />
          <h3>Logs</h3>
          {invoke.data.logs.length === 0
            ? <p className="muted">No log lines (write them with ctx.log).</p>
            : <pre className="json" tabIndex={0}>{invoke.data.logs.join("\n")}</pre>}
          {invoke.data.logs_truncated && <p className="muted">The log was cut at its limit.</p>}
        </div>
      )}
    </section>
  )
}

const Versions = ({ id, shown }: { readonly id: string; readonly shown: number }) => {
  const versions = useQuery({
    queryKey: ["functions", id, "versions"],
    queryFn: () => ok(api.GET("/v1/functions/{function_id}/versions", { params: { path: { function_id: id } } }))
  })
  return (
    <section aria-labelledby="versions">
      <h2 id="versions">Versions</h2>
      <ErrorNote error={versions.error} />
      {versions.data === undefined ?
        versions.isPending && <Loading /> :
        (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Versions">
            <table>
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Name</th>
                  <th scope="col">Limits</th>
                  <th scope="col">Made</th>
                </tr>
              </thead>
              <tbody>
                {(versions.data?.items ?? []).map((v, i) => (
                  <tr key={v.version}>
                    <td>
                      {v.version === shown
                        ? <strong aria-current="true">{v.version} (shown)</strong>
                        : (
                          <Link to={i === 0 ? `/functions/${id}` : `/functions/${id}?version=${v.version}`}>
                            Version {v.version}
                          </Link>
                        )}
                      {i === 0 && " · current"}
                    </td>
                    <td>{v.name}</td>
                    <td>
                      {v.timeout_ms} ms · {v.memory_mb} MiB
                    </td>
                    <td>{time(v.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
    </section>
  )
}
