import { useMutation } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, roleAtLeast } from "../api.js"
import { navigate, useLocation } from "../router.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Field, Loading, MoreButton, PageTitle, time, usePaged } from "../ui.js"

const size = (n: number) =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`

/** The organization's workspace files: browse by prefix, upload, download, delete. */
export default function Files() {
  const session = useSession()
  const { query } = useLocation()
  const prefix = query.get("prefix") ?? ""
  const [draft, setDraft] = useState(prefix)
  const [file, setFile] = useState<File | undefined>()
  const [name, setName] = useState("")
  const [problem, setProblem] = useState<string | undefined>()
  const files = usePaged(["files", prefix], (cursor) =>
    ok(api.GET("/v1/files", {
      params: {
        query: { limit: 50, ...(prefix !== "" ? { prefix } : {}), ...(cursor !== undefined ? { cursor } : {}) }
      }
    })))
  const upload = useMutation({
    mutationFn: (f: File) =>
      ok(api.POST("/v1/files", {
        params: { query: { name: name.trim() || f.name } },
        body: f as never,
        // the file itself is the body (its type is the file's), not JSON
        bodySerializer: (b: unknown) => b as BodyInit,
        headers: { "content-type": f.type || "application/octet-stream" }
      })),
    onSuccess: () => {
      setFile(undefined)
      setName("")
      queryClient.invalidateQueries({ queryKey: ["files"] })
    }
  })
  const remove = useMutation({
    mutationFn: (id: string) => ok(api.DELETE("/v1/files/{file_id}", { params: { path: { file_id: id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["files"] })
  })
  const canWrite = roleAtLeast(session.role, "builder")
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (file === undefined) return setProblem("Choose a file to upload.")
    setProblem(undefined)
    upload.mutate(file)
  }
  return (
    <section>
      <PageTitle>Files</PageTitle>
      {canWrite && (
        <form onSubmit={submit} noValidate className="row panel" aria-label="Upload a file">
          <Field label="File" error={problem}>
            {(p) => <input {...p} type="file" onChange={(e) => setFile(e.target.files?.[0])} />}
          </Field>
          <Field label="Name in the workspace" hint="Optional, e.g. shared/brief.txt">
            {(p) => <input {...p} value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <button type="submit" className="primary" disabled={upload.isPending}>Upload</button>
        </form>
      )}
      <form
        role="search"
        className="filters"
        onSubmit={(e) => {
          e.preventDefault()
          navigate(draft.trim() === "" ? "/files" : `/files?prefix=${encodeURIComponent(draft.trim())}`)
        }}
      >
        <Field label="Folder prefix">
          {(p) => <input {...p} value={draft} onChange={(e) => setDraft(e.target.value)} />}
        </Field>
        <button type="submit">Show</button>
      </form>
      <ErrorNote error={files.error ?? upload.error ?? remove.error} />
      {files.data === undefined ? files.isPending && <Loading /> : files.items.length === 0
        ? <Empty title="No files here.">Files uploaded here are readable by every agent of the organization.</Empty>
        : (
          <div className="table-wrap" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Size</th>
                  <th scope="col">Type</th>
                  <th scope="col">Scope</th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {files.items.map((f) => (
                  <tr key={f.id}>
                    <td>
                      <a href={`/v1/files/${f.id}/content`} download={f.name.split("/").at(-1)}>{f.name}</a>
                    </td>
                    <td>{size(f.size)}</td>
                    <td>{f.content_type}</td>
                    <td>{f.scope}</td>
                    <td>{time(f.created_at)}</td>
                    <td>
                      {canWrite && (
                        <button
                          type="button"
                          className="danger"
                          aria-label={`Delete ${f.name}`}
                          onClick={() => window.confirm(`Delete ${f.name}?`) && remove.mutate(f.id)}
                        >
                          Delete
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      <MoreButton query={files} />
    </section>
  )
}
