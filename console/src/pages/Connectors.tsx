import { useMutation } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, roleAtLeast, type Schemas } from "../api.js"
import { Link, navigate, useLocation } from "../router.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Field, Loading, MoreButton, PageTitle, usePaged } from "../ui.js"

/** The connector catalog (search, paged) and adding a connector from an OpenAPI document. */
export default function Connectors() {
  const session = useSession()
  const { query } = useLocation()
  const search = query.get("q") ?? ""
  const [draft, setDraft] = useState(search)
  const [adding, setAdding] = useState(false)
  const catalog = usePaged(["connectors", "catalog", search], (cursor) =>
    ok(api.GET("/v1/tools", {
      params: {
        query: {
          type: "connector",
          limit: 25,
          ...(search !== "" ? { query: search } : {}),
          ...(cursor !== undefined ? { cursor } : {})
        }
      }
    })))
  const canBuild = roleAtLeast(session.role, "builder")
  return (
    <section>
      <PageTitle
        actions={canBuild && !adding && (
          <button type="button" className="primary" onClick={() => setAdding(true)}>Add connector</button>
        )}
      >
        Connectors
      </PageTitle>
      {adding && <AddConnector onClose={() => setAdding(false)} />}
      <form
        role="search"
        className="filters"
        onSubmit={(e) => {
          e.preventDefault()
          navigate(draft.trim() === "" ? "/connectors" : `/connectors?q=${encodeURIComponent(draft.trim())}`)
        }}
      >
        <Field label="Search connectors">
          {(p) => <input {...p} type="search" value={draft} onChange={(e) => setDraft(e.target.value)} />}
        </Field>
        <button type="submit">Search</button>
      </form>
      <ErrorNote error={catalog.error} />
      {catalog.data === undefined ? catalog.isPending && <Loading /> : catalog.items.length === 0
        ? (
          <Empty title={search === "" ? "No connectors yet." : `No connector matches “${search}”.`}>
            {canBuild ? "Add one from an OpenAPI document with Add connector." : "A Builder adds connectors."}
          </Empty>
        )
        : (
          <ul className="cards">
            {catalog.items.map((c) => (
              <li key={c.id} className="card">
                <h2 className="card-title">
                  <Link to={`/connectors/${c.id}`}>{c.name}</Link>
                </h2>
                <p>{c.description}</p>
                <p className="muted">
                  {c.total_operations} operations · {c.connections.length} connection(s) · auth{" "}
                  {c.auth_types.join(", ") || "none"}
                  {c.built_in && " · built in"}
                </p>
              </li>
            ))}
          </ul>
        )}
      <MoreButton query={catalog} />
    </section>
  )
}

type Keys = "spec" | "server_url"

const AddConnector = ({ onClose }: { readonly onClose: () => void }) => {
  const [spec, setSpec] = useState("")
  const [fileName, setFileName] = useState<string | undefined>()
  const [name, setName] = useState("")
  const [serverUrl, setServerUrl] = useState("")
  const [errors, setErrors] = useState<Partial<Record<Keys, string>>>({})
  const create = useMutation({
    mutationFn: (body: Schemas["CreateConnector"]) => ok(api.POST("/v1/tools/connectors", { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["connectors"] })
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const found: Partial<Record<Keys, string>> = {}
    if (spec.trim() === "") found.spec = "Upload or paste an OpenAPI 3 document (JSON or YAML)."
    if (serverUrl.trim() !== "" && !/^https?:\/\/\S+$/.test(serverUrl.trim())) {
      found.server_url = "A server URL starts with http:// or https://."
    }
    setErrors(found)
    if (Object.keys(found).length > 0) return
    create.mutate({
      spec,
      ...(name.trim() !== "" ? { name: name.trim() } : {}),
      ...(serverUrl.trim() !== "" ? { server_url: serverUrl.trim() } : {})
    })
  }
  const report = create.data?.import_report
  return (
    <section aria-labelledby="add-connector" className="panel">
      <h2 id="add-connector">Add a connector from OpenAPI</h2>
      {create.data !== undefined && report !== undefined
        ? (
          <div role="status">
            <p>
              Imported <Link to={`/connectors/${create.data.id}`}>{create.data.name}</Link>: {report.imported}{" "}
              operations.
            </p>
            <h3>Import report</h3>
            {report.skipped.length === 0 && report.warnings.length === 0 && <p>Nothing skipped, no warnings.</p>}
            {report.skipped.length > 0 && (
              <>
                <h4>Skipped ({report.skipped.length})</h4>
                <ul>
                  {report.skipped.map((s) => (
                    <li key={s.pointer}>
                      <code>{s.method.toUpperCase()} {s.path}</code>: {s.reason}
                    </li>
                  ))}
                </ul>
              </>
            )}
            {report.warnings.length > 0 && (
              <>
                <h4>Warnings ({report.warnings.length})</h4>
                <ul>
                  {report.warnings.map((w) => (
                    <li key={w.pointer + w.message}>
                      <code>{w.pointer}</code>: {w.message}
                    </li>
                  ))}
                </ul>
              </>
            )}
            <button type="button" onClick={onClose}>Done</button>
          </div>
        )
        : (
          <form onSubmit={submit} noValidate className="form">
            <Field label="OpenAPI file" hint={fileName ?? "JSON or YAML, OpenAPI 3.0 or 3.1"}>
              {(p) => (
                <input
                  {...p}
                  type="file"
                  accept=".json,.yaml,.yml,application/json,application/yaml"
                  onChange={async (e) => {
                    const file = e.target.files?.[0]
                    if (file !== undefined) {
                      setFileName(file.name)
                      setSpec(await file.text())
                    }
                  }}
                />
              )}
            </Field>
            <Field label="OpenAPI document" error={errors.spec} hint="Or paste it here.">
              {(p) => <textarea {...p} rows={6} value={spec} onChange={(e) => setSpec(e.target.value)} />}
            </Field>
            <Field label="Name" hint="Optional: the document's title otherwise.">
              {(p) => <input {...p} value={name} onChange={(e) => setName(e.target.value)} />}
            </Field>
            <Field label="Server URL" error={errors.server_url} hint="Optional: the document's first server otherwise.">
              {(p) => <input {...p} type="url" value={serverUrl} onChange={(e) => setServerUrl(e.target.value)} />}
            </Field>
            <ErrorNote error={create.error} />
            <button type="submit" className="primary" disabled={create.isPending}>Import</button>
            <button type="button" onClick={onClose}>Cancel</button>
          </form>
        )}
    </section>
  )
}
