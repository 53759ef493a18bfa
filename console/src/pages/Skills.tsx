import { useMutation, useQuery } from "@tanstack/react-query"
import { useState } from "react"
import { api, ok, queryClient, roleAtLeast, type Schemas } from "../api.js"
import { useSession } from "../session.js"
import { Empty, ErrorNote, Field, Loading, MoreButton, PageTitle, Status, time, usePaged } from "../ui.js"

/** Skills: the catalog, visibility and allowlist, publish and archive, and (Admins) violations. */
export default function Skills() {
  const session = useSession()
  const skills = usePaged(
    ["skills"],
    (cursor) =>
      ok(api.GET("/v1/skills", { params: { query: { limit: 25, ...(cursor !== undefined ? { cursor } : {}) } } }))
  )
  const isAdmin = roleAtLeast(session.role, "admin")
  const violations = useQuery({
    queryKey: ["skills", "violations"],
    enabled: isAdmin,
    queryFn: () => ok(api.GET("/v1/skills/violations"))
  })
  return (
    <section>
      <PageTitle>Skills</PageTitle>
      <ErrorNote error={skills.error} />
      {skills.data === undefined ? skills.isPending && <Loading /> : skills.items.length === 0
        ? (
          <Empty title="No skills yet.">
            A skill bundles connector actions for agents. Publish them from a <code>switchyard.yaml</code>{" "}
            manifest (<code>switchyard skills publish</code>) or with <code>POST /v1/skills</code>.
          </Empty>
        )
        : skills.items.map((s) => <SkillCard key={s.id} skill={s} />)}
      <MoreButton query={skills} />
      {isAdmin && (
        <section aria-labelledby="violations">
          <h2 id="violations">Violations</h2>
          <ErrorNote error={violations.error} />
          {violations.data && (violations.data.items.length === 0
            ? <p className="muted">No agent used or attached a skill it was not allowed.</p>
            : (
              <div className="table-wrap" tabIndex={0}>
                <table>
                  <thead>
                    <tr>
                      <th scope="col">When</th>
                      <th scope="col">Skill</th>
                      <th scope="col">Agent</th>
                      <th scope="col">Kind</th>
                      <th scope="col">Mode</th>
                    </tr>
                  </thead>
                  <tbody>
                    {violations.data.items.map((v) => (
                      <tr key={v.id}>
                        <td>{time(v.at)}</td>
                        <td>{v.skill_id.slice(0, 8)}</td>
                        <td>{v.agent_id.slice(0, 8)}</td>
                        <td>{v.kind} {v.tool}</td>
                        <td>{v.mode}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            ))}
        </section>
      )}
    </section>
  )
}

const SkillCard = ({ skill: s }: { readonly skill: Schemas["Skill"] }) => {
  const session = useSession()
  const [visibility, setVisibility] = useState(s.visibility)
  const [allowlist, setAllowlist] = useState(s.allowlist.join(", "))
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["skills"] })
  const access = useMutation({
    mutationFn: () =>
      ok(api.PUT("/v1/skills/{skill_id}/access", {
        params: { path: { skill_id: s.id } },
        body: { visibility, allowlist: allowlist.split(/[\s,]+/).filter(Boolean) }
      })),
    onSuccess: refresh
  })
  const publish = useMutation({
    mutationFn: () => ok(api.POST("/v1/skills/{skill_id}/publish", { params: { path: { skill_id: s.id } } })),
    onSuccess: refresh
  })
  const archive = useMutation({
    mutationFn: () => ok(api.POST("/v1/skills/{skill_id}/archive", { params: { path: { skill_id: s.id } } })),
    onSuccess: refresh
  })
  const canManage = roleAtLeast(session.role, "builder")
  return (
    <article className="card" aria-label={`Skill ${s.name}`}>
      <h2 className="card-title">
        {s.name} <Status value={s.status} />
      </h2>
      <p>{s.description}</p>
      <p className="muted">
        version {s.version} · {s.actions.length} action(s)
        {s.actions.some((a) => a.requires_approval === true) && " · some need approval"} · updated {time(s.updated_at)}
      </p>
      {canManage && (
        <form
          className="row"
          aria-label={`Access to ${s.name}`}
          onSubmit={(e) => {
            e.preventDefault()
            access.mutate()
          }}
        >
          <Field label="Visibility">
            {(p) => (
              <select
                {...p}
                value={visibility}
                onChange={(e) => setVisibility(e.target.value as typeof visibility)}
              >
                <option value="private">private</option>
                <option value="restricted">restricted</option>
                <option value="organization">organization</option>
              </select>
            )}
          </Field>
          {visibility === "restricted" && (
            <Field label="Allowlist" hint="Agent, user or group ids, comma-separated">
              {(p) => <input {...p} value={allowlist} onChange={(e) => setAllowlist(e.target.value)} />}
            </Field>
          )}
          <button type="submit">Save access</button>
          {s.status !== "published" && <button type="button" onClick={() => publish.mutate()}>Publish</button>}
          {s.status !== "archived" && (
            <button type="button" className="danger" onClick={() => archive.mutate()}>Archive</button>
          )}
        </form>
      )}
      <ErrorNote error={access.error ?? publish.error ?? archive.error} />
    </article>
  )
}
