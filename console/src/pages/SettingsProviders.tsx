import { useMutation, useQuery } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { api, ok, queryClient, type Schemas } from "../api.js"
import { ErrorNote, Field, Loading, time } from "../ui.js"

type Provider = Schemas["ModelProviderSettings"]["provider"]
const PROVIDERS: ReadonlyArray<Provider> = ["openai", "openai-chat", "anthropic"]

/** The organization's model provider keys and endpoints (Admins); keys are write-only. */
export default function ModelProviders() {
  const list = useQuery({ queryKey: ["model-providers"], queryFn: () => ok(api.GET("/v1/model-providers")) })
  if (list.isPending) return <Loading />
  return (
    <section aria-labelledby="providers">
      <h2 id="providers">Model providers</h2>
      <ErrorNote error={list.error} />
      {PROVIDERS.map((p) => <ProviderForm key={p} provider={p} current={list.data?.find((s) => s.provider === p)} />)}
    </section>
  )
}

const ProviderForm = ({ provider, current }: {
  readonly provider: Provider
  readonly current: Schemas["ModelProviderSettings"] | undefined
}) => {
  const [apiKey, setApiKey] = useState("")
  const [baseUrl, setBaseUrl] = useState(current?.base_url ?? "")
  const [error, setError] = useState<string | undefined>()
  const refresh = () => queryClient.invalidateQueries({ queryKey: ["model-providers"] })
  const save = useMutation({
    mutationFn: (body: Schemas["SetModelProvider"]) =>
      ok(api.PUT("/v1/model-providers/{provider}", { params: { path: { provider } }, body })),
    onSuccess: () => {
      setApiKey("")
      refresh()
    }
  })
  const remove = useMutation({
    mutationFn: () => ok(api.DELETE("/v1/model-providers/{provider}", { params: { path: { provider } } })),
    onSuccess: refresh
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    if (baseUrl.trim() !== "" && !/^https?:\/\/\S+$/.test(baseUrl.trim())) {
      return setError("A base URL starts with http:// or https://.")
    }
    if (apiKey === "" && baseUrl.trim() === "") return setError("Enter an API key or a base URL.")
    setError(undefined)
    save.mutate({
      ...(apiKey !== "" ? { api_key: apiKey } : {}),
      ...(baseUrl.trim() !== "" ? { base_url: baseUrl.trim() } : {})
    })
  }
  return (
    <form onSubmit={submit} noValidate className="card" aria-label={`Provider ${provider}`}>
      <h3>{provider}</h3>
      <p className="muted">
        {current === undefined
          ? "Not configured."
          : `${current.has_api_key ? "Key set" : "No key"} · updated ${time(current.updated_at)}`}
      </p>
      <div className="row">
        <Field label={`${provider} API key`} error={error}>
          {(p) => (
            <input
              {...p}
              type="password"
              autoComplete="off"
              value={apiKey}
              onChange={(e) => setApiKey(e.target.value)}
            />
          )}
        </Field>
        <Field label={`${provider} base URL`}>
          {(p) => <input {...p} type="url" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} />}
        </Field>
      </div>
      <ErrorNote error={save.error ?? remove.error} />
      <button type="submit" disabled={save.isPending}>Save {provider}</button>
      {current !== undefined && (
        <button type="button" className="danger" onClick={() => remove.mutate()}>
          Remove
        </button>
      )}
    </form>
  )
}
