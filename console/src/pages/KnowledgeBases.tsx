import { useMutation } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, roleAtLeast, type Schemas } from "../api.js"
import { Link, navigate } from "../router.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Field, Loading, MoreButton, PageTitle, time, usePaged } from "../ui.js"

/** The organization's knowledge bases: list (paged), create. A base's page holds its documents and search. */
export default function KnowledgeBases() {
  const session = useSession()
  const canBuild = roleAtLeast(session.role, "builder")
  const [creating, setCreating] = useState(false)
  const bases = usePaged(["knowledge-bases", "paged"], (cursor) =>
    ok(api.GET("/v1/knowledge-bases", {
      params: { query: { limit: 50, ...(cursor !== undefined ? { cursor } : {}) } }
    })))
  return (
    <section>
      <PageTitle
        actions={canBuild && !creating && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>New knowledge base</button>
        )}
      >
        Knowledge bases
      </PageTitle>
      {creating && <KnowledgeBaseForm onDone={() => setCreating(false)} />}
      <ErrorNote error={bases.error} />
      {bases.data === undefined ? bases.isPending && <Loading /> : bases.items.length === 0
        ? (
          <Empty title="No knowledge bases yet.">
            {canBuild
              ? "Create one, add documents (text, a workspace file or a web page), then attach it to an agent: its runs search it with the search_knowledge tool."
              : "A Builder creates knowledge bases; you can then search them here."}
          </Empty>
        )
        : (
          <ul className="plain">
            {bases.items.map((b) => (
              <li key={b.id} className="card">
                <h2 className="card-title">
                  <Link to={`/knowledge-bases/${b.id}`}>{b.name}</Link>
                </h2>
                {b.description !== "" && <p>{b.description}</p>}
                <p className="muted">
                  {b.document_count} {b.document_count === 1 ? "document" : "documents"} · {b.language} · created{" "}
                  {time(b.created_at)}
                </p>
              </li>
            ))}
          </ul>
        )}
      <MoreButton query={bases} />
    </section>
  )
}

type Keys = "name" | "description" | "language"

/** Create, and edit (`base` given): name, description, language. */
export const KnowledgeBaseForm = ({ base, onDone }: {
  readonly base?: Schemas["KnowledgeBase"]
  readonly onDone: () => void
}) => {
  const [name, setName] = useState(base?.name ?? "")
  const [description, setDescription] = useState(base?.description ?? "")
  const [language, setLanguage] = useState(base?.language ?? "english")
  const [errors, setErrors] = useState<Partial<Record<Keys, string>>>({})
  const save = useMutation({
    mutationFn: (body: Schemas["CreateKnowledgeBase"]) =>
      base === undefined
        ? ok(api.POST("/v1/knowledge-bases", { body }))
        : ok(api.PATCH("/v1/knowledge-bases/{knowledge_base_id}", {
          params: { path: { knowledge_base_id: base.id } },
          body
        })),
    onSuccess: (saved) => {
      queryClient.invalidateQueries({ queryKey: ["knowledge-bases"] })
      onDone()
      if (base === undefined) navigate(`/knowledge-bases/${saved.id}`)
    }
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const found: Partial<Record<Keys, string>> = {}
    if (name.trim() === "") found.name = "Name the knowledge base."
    else if (name.trim().length > 200) found.name = "At most 200 characters."
    if (description.length > 2000) found.description = "At most 2000 characters."
    if (!/^[a-z][a-z0-9_]{0,62}$/.test(language.trim())) {
      found.language = "A text search language in lower case, e.g. english, simple, german."
    }
    setErrors(found)
    if (Object.keys(found).length > 0) return
    save.mutate({ name: name.trim(), description, language: language.trim() })
  }
  return (
    <form
      onSubmit={submit}
      noValidate
      className="form panel"
      aria-label={base === undefined ? "New knowledge base" : "Edit knowledge base"}
    >
      <Field label="Knowledge base name" error={errors.name}>
        {(p) => <input {...p} value={name} onChange={(e) => setName(e.target.value)} />}
      </Field>
      <Field
        label="Description"
        error={errors.description}
        hint="What it holds: agents read it in their search_knowledge tool's description."
      >
        {(p) => <textarea {...p} rows={2} value={description} onChange={(e) => setDescription(e.target.value)} />}
      </Field>
      <Field
        label="Language"
        error={errors.language}
        hint="Stemming and stop words: english, simple (none), german, french, spanish, …"
      >
        {(p) => <input {...p} value={language} onChange={(e) => setLanguage(e.target.value)} />}
      </Field>
      <ErrorNote error={save.error} />
      <button type="submit" className="primary" disabled={save.isPending}>
        {base === undefined ? "Create knowledge base" : "Save"}
      </button>
      <button type="button" onClick={onDone}>Cancel</button>
    </form>
  )
}
