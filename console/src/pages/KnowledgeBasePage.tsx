import { useMutation, useQuery } from "@tanstack/react-query"
import { type FormEvent, useEffect, useState } from "react"
import { api, ok, queryClient, roleAtLeast, type Schemas } from "../api.js"
import { Link, navigate } from "../router.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Field, Loading, MoreButton, PageTitle, Status, time, usePaged } from "../ui.js"
import { KnowledgeBaseForm } from "./KnowledgeBases.js"

/** A knowledge base: its documents (add, status and progress, delete), search, edit and delete. */
export default function KnowledgeBasePage({ id }: { readonly id: string }) {
  const session = useSession()
  const canBuild = roleAtLeast(session.role, "builder")
  const [editing, setEditing] = useState(false)
  const path = { knowledge_base_id: id }
  const base = useQuery({
    queryKey: ["knowledge-bases", id],
    queryFn: () => ok(api.GET("/v1/knowledge-bases/{knowledge_base_id}", { params: { path } }))
  })
  const remove = useMutation({
    mutationFn: () => ok(api.DELETE("/v1/knowledge-bases/{knowledge_base_id}", { params: { path } })),
    onSuccess: () => {
      queryClient.invalidateQueries({ queryKey: ["knowledge-bases"] })
      navigate("/knowledge-bases")
    }
  })
  if (base.isPending) return <Loading />
  if (base.data === undefined) {
    return (
      <section>
        <PageTitle>Knowledge base</PageTitle>
        <ErrorNote error={base.error} />
        <p>
          <Link to="/knowledge-bases">All knowledge bases</Link>
        </p>
      </section>
    )
  }
  const b = base.data
  return (
    <section>
      <PageTitle
        actions={canBuild && (
          <div className="actions">
            {!editing && <button type="button" onClick={() => setEditing(true)}>Edit</button>}
            <button
              type="button"
              className="danger"
              aria-label={`Delete knowledge base ${b.name}`}
              onClick={() =>
                window.confirm(`Delete the knowledge base ${b.name} and its documents? Agents stop searching it.`) &&
                remove.mutate()}
            >
              Delete
            </button>
          </div>
        )}
      >
        {b.name}
      </PageTitle>
      <p className="muted">
        <Link to="/knowledge-bases">Knowledge bases</Link> · {b.language} · {b.document_count}{" "}
        {b.document_count === 1 ? "document" : "documents"}
      </p>
      {b.description !== "" && <p>{b.description}</p>}
      <ErrorNote error={remove.error} />
      {editing && <KnowledgeBaseForm base={b} onDone={() => setEditing(false)} />}
      <Search baseId={b.id} />
      <Documents baseId={b.id} canBuild={canBuild} />
    </section>
  )
}

const Search = ({ baseId }: { readonly baseId: string }) => {
  const [query, setQuery] = useState("")
  const [problem, setProblem] = useState<string | undefined>()
  const search = useMutation({
    mutationFn: (q: string) =>
      ok(api.POST("/v1/knowledge-bases/{knowledge_base_id}/search", {
        params: { path: { knowledge_base_id: baseId } },
        body: { query: q, limit: 10 }
      }))
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const q = query.trim()
    if (q === "") return setProblem("Type words to search for.")
    if (q.length > 1000) return setProblem("At most 1000 characters.")
    setProblem(undefined)
    search.mutate(q)
  }
  return (
    <section aria-labelledby="kb-search">
      <h2 id="kb-search">Search</h2>
      <form role="search" className="filters" onSubmit={submit} noValidate aria-label="Search this knowledge base">
        <Field label="Search the documents" error={problem} hint={"Words, \"a phrase\", or, -word"}>
          {(p) => <input {...p} type="search" value={query} onChange={(e) => setQuery(e.target.value)} />}
        </Field>
        <button type="submit" disabled={search.isPending}>Search</button>
      </form>
      <ErrorNote error={search.error} />
      {search.data !== undefined && (
        search.data.items.length === 0
          ? (
            <p className="muted" role="status">
              Nothing found. Only ready documents are searched; try other words.
            </p>
          )
          : (
            <ol className="plain" aria-label="Search results">
              {search.data.items.map((hit) => (
                <li key={hit.chunk_id} className="card">
                  <strong>{hit.document_name}</strong>
                  {hit.heading_path.length > 0 && <span className="muted">· {hit.heading_path.join(" › ")}</span>}
                  <span className="muted">· score {hit.score.toFixed(3)}</span>
                  <p className="snippet">
                    <Snippet text={hit.snippet} />
                  </p>
                </li>
              ))}
            </ol>
          )
      )}
    </section>
  )
}

/** The API marks matches in `**…**`: shown as <mark>, the rest as text. */
const Snippet = ({ text }: { readonly text: string }) => (
  <>{text.split(/\*\*(.+?)\*\*/g).map((part, i) => i % 2 === 1 ? <mark key={i}>{part}</mark> : part)}</>
)

const Documents = ({ baseId, canBuild }: { readonly baseId: string; readonly canBuild: boolean }) => {
  const [adding, setAdding] = useState(false)
  const path = { knowledge_base_id: baseId }
  // while a document is processed, its status and progress are polled
  const [polling, setPolling] = useState(false)
  const documents = usePaged(
    ["knowledge-bases", baseId, "documents"],
    (cursor) =>
      ok(api.GET("/v1/knowledge-bases/{knowledge_base_id}/documents", {
        params: { path, query: { limit: 50, ...(cursor !== undefined ? { cursor } : {}) } }
      })),
    { refetchInterval: polling ? 1500 : false }
  )
  const processing = documents.items.some((d) => d.status === "processing")
  useEffect(() => {
    setPolling(processing)
    // a document that became ready changes the base's count and what search finds
    if (!processing) queryClient.invalidateQueries({ queryKey: ["knowledge-bases", baseId], exact: true })
  }, [processing, baseId])
  const remove = useMutation({
    mutationFn: (documentId: string) =>
      ok(api.DELETE("/v1/knowledge-bases/{knowledge_base_id}/documents/{document_id}", {
        params: { path: { ...path, document_id: documentId } }
      })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["knowledge-bases"] })
  })
  return (
    <section aria-labelledby="kb-documents">
      <div className="page-title">
        <h2 id="kb-documents">Documents</h2>
        {canBuild && !adding && <button type="button" onClick={() => setAdding(true)}>Add document</button>}
      </div>
      {adding && <AddDocument baseId={baseId} onDone={() => setAdding(false)} />}
      <ErrorNote error={documents.error ?? remove.error} />
      {documents.data === undefined ? documents.isPending && <Loading /> : documents.items.length === 0
        ? (
          <Empty title="No documents yet.">
            {canBuild
              ? "Add a document from text, a workspace file or a web page's URL: it is read, chunked and indexed, then searchable."
              : "A Builder adds documents; they appear here."}
          </Empty>
        )
        : (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Documents">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Source</th>
                  <th scope="col">Chunks</th>
                  <th scope="col">Added</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {documents.items.map((d) => (
                  <DocumentRow
                    key={d.id}
                    d={d}
                    canBuild={canBuild}
                    remove={remove.mutate}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
      <MoreButton query={documents} />
    </section>
  )
}

const DocumentRow = ({ d, canBuild, remove }: {
  readonly d: Schemas["KnowledgeDocument"]
  readonly canBuild: boolean
  readonly remove: (id: string) => void
}) => (
  <tr>
    <td>
      {d.name} <span className="muted">({d.format})</span>
    </td>
    <td>
      <Status value={d.status} />
      {d.status === "processing" && (
        <progress max={1} value={d.progress} aria-label={`Progress of ${d.name}`}>
          {Math.round(d.progress * 100)}%
        </progress>
      )}
      {d.error !== null && (
        <div className="field-error">
          {d.error.message} <span className="code">({d.error.reason})</span>
        </div>
      )}
    </td>
    <td>{d.source.type === "url" ? d.source.url : d.source.type === "file" ? "workspace file" : "text"}</td>
    <td>{d.chunk_count}</td>
    <td>{time(d.created_at)}</td>
    <td>
      {canBuild && (
        <button
          type="button"
          className="danger"
          aria-label={`Delete document ${d.name}`}
          onClick={() => window.confirm(`Delete the document ${d.name}?`) && remove(d.id)}
        >
          Delete
        </button>
      )}
    </td>
  </tr>
)

type Source = "text" | "file" | "url"
type DocKeys = "name" | "text" | "file" | "url"

const AddDocument = ({ baseId, onDone }: { readonly baseId: string; readonly onDone: () => void }) => {
  const [source, setSource] = useState<Source>("text")
  const [name, setName] = useState("")
  const [text, setText] = useState("")
  const [fileId, setFileId] = useState("")
  const [url, setUrl] = useState("")
  const [format, setFormat] = useState("")
  const [errors, setErrors] = useState<Partial<Record<DocKeys, string>>>({})
  const files = useQuery({
    queryKey: ["files", "for-knowledge"],
    enabled: source === "file",
    queryFn: () => ok(api.GET("/v1/files", { params: { query: { limit: 200 } } }))
  })
  const add = useMutation({
    mutationFn: (body: Schemas["AddDocument"]) =>
      ok(api.POST("/v1/knowledge-bases/{knowledge_base_id}/documents", {
        params: { path: { knowledge_base_id: baseId } },
        body
      })),
    onSuccess: () => {
      queryClient.invalidateQueries({ queryKey: ["knowledge-bases"] })
      onDone()
    }
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const found: Partial<Record<DocKeys, string>> = {}
    const chosenFile = files.data?.items.find((f) => f.id === fileId)
    const docName = name.trim() || (source === "file" ? chosenFile?.name ?? "" : "")
    if (docName === "") found.name = "Name the document, e.g. handbook/leave.md."
    else if (docName.length > 1024) found.name = "At most 1024 characters."
    if (source === "text" && text.trim() === "") found.text = "Paste the document's text."
    if (source === "file" && fileId === "") found.file = "Choose a workspace file (upload it on the Files page)."
    if (source === "url") {
      let ok = false
      try {
        ok = ["http:", "https:"].includes(new URL(url.trim()).protocol)
      } catch {
        ok = false
      }
      if (!ok) found.url = "An http or https address, e.g. https://example.com/handbook.html."
      else if (url.trim().length > 2048) found.url = "At most 2048 characters."
    }
    setErrors(found)
    if (Object.keys(found).length > 0) return
    add.mutate({
      name: docName,
      ...(source === "text" ? { text } : source === "file" ? { file_id: fileId } : { url: url.trim() }),
      ...(format !== "" ? { format: format as NonNullable<Schemas["AddDocument"]["format"]> } : {})
    })
  }
  return (
    <form onSubmit={submit} noValidate className="form panel" aria-label="Add a document">
      <fieldset>
        <legend>Source</legend>
        {([["text", "Text"], ["file", "Workspace file"], ["url", "Web address (URL)"]] as const).map(([v, label]) => (
          <label key={v} className="check">
            <input
              type="radio"
              name="source"
              value={v}
              checked={source === v}
              onChange={() => {
                setSource(v)
                // inline text cannot be a PDF
                if (v === "text" && format === "pdf") setFormat("")
              }}
            />
            {label}
          </label>
        ))}
      </fieldset>
      <Field
        label="Document name"
        error={errors.name}
        hint={source === "file" ? "Default: the file's name. Cited in search results." : "Cited in search results."}
      >
        {(p) => <input {...p} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      {source === "text" && (
        <Field label="Document text" error={errors.text}>
          {(p) => <textarea {...p} rows={8} value={text} onChange={(e) => setText(e.target.value)} />}
        </Field>
      )}
      {source === "file" && (
        <Field label="File" error={errors.file}>
          {(p) => (
            <select {...p} value={fileId} onChange={(e) => setFileId(e.target.value)}>
              <option value="">{files.isPending ? "Loading files…" : "Choose a file"}</option>
              {(files.data?.items ?? []).map((f) => <option key={f.id} value={f.id}>{f.name}</option>)}
            </select>
          )}
        </Field>
      )}
      {source === "url" && (
        <Field label="Document URL" error={errors.url} hint="Fetched once, now; internal addresses are refused.">
          {(p) => (
            <input
              {...p}
              type="url"
              value={url}
              onChange={(e) => setUrl(e.target.value)}
            />
          )}
        </Field>
      )}
      <Field label="Format" hint="Default: from the file's type or the name's extension (.md, .html, .pdf, .txt).">
        {(p) => (
          <select {...p} value={format} onChange={(e) => setFormat(e.target.value)}>
            <option value="">Automatic</option>
            <option value="txt">Plain text</option>
            <option value="md">Markdown</option>
            <option value="html">HTML</option>
            {source !== "text" && <option value="pdf">PDF</option>}
          </select>
        )}
      </Field>
      <ErrorNote error={files.error ?? add.error} />
      <button type="submit" className="primary" disabled={add.isPending}>Add document</button>
      <button type="button" onClick={onDone}>Cancel</button>
    </form>
  )
}
