import { useMutation, useQuery } from "@tanstack/react-query"
import { useState } from "react"
import { api, ok, queryClient } from "../api.js"
import { ErrorNote, Field, Status } from "../ui.js"

/**
 * The skills, knowledge bases and custom functions an agent uses: attach one from the organization's, or detach
 * it (Builders).
 */
export const AgentAttachments = ({ agentId, canBuild }: { readonly agentId: string; readonly canBuild: boolean }) => {
  const path = { agent_id: agentId }
  const attachedSkills = useQuery({
    queryKey: ["agents", agentId, "skills"],
    queryFn: () => ok(api.GET("/v1/agents/{agent_id}/skills", { params: { path } }))
  })
  const skills = useQuery({
    queryKey: ["skills", "published"],
    enabled: canBuild,
    queryFn: () => ok(api.GET("/v1/skills", { params: { query: { limit: 100 } } }))
  })
  const attachedBases = useQuery({
    queryKey: ["agents", agentId, "knowledge-bases"],
    queryFn: () => ok(api.GET("/v1/agents/{agent_id}/knowledge-bases", { params: { path } }))
  })
  const bases = useQuery({
    queryKey: ["knowledge-bases"],
    enabled: canBuild,
    queryFn: () => ok(api.GET("/v1/knowledge-bases"))
  })
  const attachedFunctions = useQuery({
    queryKey: ["agents", agentId, "functions"],
    queryFn: () => ok(api.GET("/v1/agents/{agent_id}/functions", { params: { path } }))
  })
  const functions = useQuery({
    queryKey: ["functions"],
    enabled: canBuild,
    queryFn: () => ok(api.GET("/v1/functions"))
  })
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["agents", agentId] })
  const skill = useMutation({
    mutationFn: ({ attach, id }: { id: string; attach: boolean }) =>
      attach
        ? ok(api.PUT("/v1/agents/{agent_id}/skills/{skill_id}", { params: { path: { ...path, skill_id: id } } }))
        : ok(api.DELETE("/v1/agents/{agent_id}/skills/{skill_id}", { params: { path: { ...path, skill_id: id } } })),
    onSuccess: refresh
  })
  const base = useMutation({
    mutationFn: ({ attach, id }: { id: string; attach: boolean }) => {
      const params = { params: { path: { ...path, knowledge_base_id: id } } }
      return attach
        ? ok(api.PUT("/v1/agents/{agent_id}/knowledge-bases/{knowledge_base_id}", params))
        : ok(api.DELETE("/v1/agents/{agent_id}/knowledge-bases/{knowledge_base_id}", params))
    },
    onSuccess: refresh
  })
  const fn = useMutation({
    mutationFn: ({ attach, id }: { id: string; attach: boolean }) => {
      const params = { params: { path: { ...path, function_id: id } } }
      return attach
        ? ok(api.PUT("/v1/agents/{agent_id}/functions/{function_id}", params))
        : ok(api.DELETE("/v1/agents/{agent_id}/functions/{function_id}", params))
    },
    onSuccess: refresh
  })
  const [functionId, setFunctionId] = useState("")
  const [skillId, setSkillId] = useState("")
  const [baseId, setBaseId] = useState("")
  const skillOptions = (skills.data?.items ?? []).filter((s) =>
    s.status === "published" && !(attachedSkills.data ?? []).some((a) => a.skill.id === s.id)
  )
  const baseOptions = (bases.data?.items ?? []).filter((b) =>
    !(attachedBases.data?.items ?? []).some((a) => a.id === b.id)
  )
  const functionOptions = (functions.data?.items ?? []).filter((f) =>
    !(attachedFunctions.data?.items ?? []).some((a) => a.function_id === f.id)
  )
  return (
    <section aria-labelledby="attachments">
      <h2 id="attachments">Skills, knowledge and functions</h2>
      <ErrorNote
        error={attachedSkills.error ?? attachedBases.error ?? attachedFunctions.error ?? skill.error ?? base.error ??
          fn.error}
      />
      <ul className="plain">
        {(attachedSkills.data ?? []).map((a) => (
          <li key={a.skill.id} className="card">
            Skill <strong>{a.skill.name}</strong> <Status value={a.allowed ? a.skill.status : "not allowed"} />
            {canBuild && (
              <button
                type="button"
                className="inline"
                aria-label={`Detach skill ${a.skill.name}`}
                onClick={() => skill.mutate({ id: a.skill.id, attach: false })}
              >
                Detach
              </button>
            )}
          </li>
        ))}
        {(attachedBases.data?.items ?? []).map((b) => (
          <li key={b.id} className="card">
            Knowledge base <strong>{b.name}</strong>
            {canBuild && (
              <button
                type="button"
                className="inline"
                aria-label={`Detach knowledge base ${b.name}`}
                onClick={() => base.mutate({ id: b.id, attach: false })}
              >
                Detach
              </button>
            )}
          </li>
        ))}
        {(attachedFunctions.data?.items ?? []).map((f) => (
          <li key={f.function_id} className="card">
            Function <strong>{f.name}</strong>
            {canBuild && (
              <button
                type="button"
                className="inline"
                aria-label={`Detach function ${f.name}`}
                onClick={() => fn.mutate({ id: f.function_id, attach: false })}
              >
                Detach
              </button>
            )}
          </li>
        ))}
      </ul>
      {(attachedSkills.data?.length ?? 0) === 0 && (attachedBases.data?.items.length ?? 0) === 0 &&
        (attachedFunctions.data?.items.length ?? 0) === 0 && (
        <p className="muted">No skills, knowledge bases or functions: the agent uses only its own tools.</p>
      )}
      {canBuild && (
        <div className="row">
          {skillOptions.length > 0 && (
            <>
              <Field label="Skill to attach">
                {(p) => (
                  <select {...p} value={skillId} onChange={(e) => setSkillId(e.target.value)}>
                    <option value="">Choose a skill</option>
                    {skillOptions.map((s) => <option key={s.id} value={s.id}>{s.name}</option>)}
                  </select>
                )}
              </Field>
              <button
                type="button"
                disabled={skillId === ""}
                onClick={() => skill.mutate({ id: skillId, attach: true }, { onSuccess: () => setSkillId("") })}
              >
                Attach skill
              </button>
            </>
          )}
          {baseOptions.length > 0 && (
            <>
              <Field label="Knowledge base to attach">
                {(p) => (
                  <select {...p} value={baseId} onChange={(e) => setBaseId(e.target.value)}>
                    <option value="">Choose a knowledge base</option>
                    {baseOptions.map((b) => <option key={b.id} value={b.id}>{b.name}</option>)}
                  </select>
                )}
              </Field>
              <button
                type="button"
                disabled={baseId === ""}
                onClick={() => base.mutate({ id: baseId, attach: true }, { onSuccess: () => setBaseId("") })}
              >
                Attach knowledge base
              </button>
            </>
          )}
          {functionOptions.length > 0 && (
            <>
              <Field label="Function to attach">
                {(p) => (
                  <select {...p} value={functionId} onChange={(e) => setFunctionId(e.target.value)}>
                    <option value="">Choose a function</option>
                    {functionOptions.map((f) => <option key={f.id} value={f.id}>{f.name}</option>)}
                  </select>
                )}
              </Field>
              <button
                type="button"
                disabled={functionId === ""}
                onClick={() => fn.mutate({ id: functionId, attach: true }, { onSuccess: () => setFunctionId("") })}
              >
                Attach function
              </button>
            </>
          )}
        </div>
      )}
    </section>
  )
}
