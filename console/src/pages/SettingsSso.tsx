import { useMutation, useQuery } from "@tanstack/react-query"
import { type FormEvent, useEffect, useState } from "react"
import { api, ApiError, ok, queryClient, type Schemas } from "../api.js"
import { ErrorNote, Field, Loading } from "../ui.js"

type Keys = "issuer" | "client_id" | "client_secret" | "domains"

/** OIDC single sign-on of the organization (Admins). */
export default function Sso() {
  // before setup the 404 names the redirect URI: the client at the provider is registered with it first
  const [setupUri, setSetupUri] = useState<string>()
  const current = useQuery({
    queryKey: ["sso"],
    queryFn: async () => {
      try {
        return await ok(api.GET("/v1/sso"))
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) {
          const details = e.details as { redirect_uri?: unknown } | undefined
          if (typeof details?.redirect_uri === "string") setSetupUri(details.redirect_uri)
          return null
        }
        throw e
      }
    }
  })
  const [issuer, setIssuer] = useState("")
  const [clientId, setClientId] = useState("")
  const [secret, setSecret] = useState("")
  const [domains, setDomains] = useState("")
  const [enabled, setEnabled] = useState(true)
  const [errors, setErrors] = useState<Partial<Record<Keys, string>>>({})
  useEffect(() => {
    if (current.data) {
      setIssuer(current.data.issuer)
      setClientId(current.data.client_id)
      setDomains(current.data.allowed_email_domains.join(", "))
      setEnabled(current.data.enabled)
    }
  }, [current.data])
  const save = useMutation({
    mutationFn: (body: Schemas["PutSsoSettings"]) => ok(api.PUT("/v1/sso", { body })),
    onSuccess: (s) => queryClient.setQueryData(["sso"], s)
  })
  const remove = useMutation({
    mutationFn: () => ok(api.DELETE("/v1/sso")),
    onSuccess: () => {
      setSetupUri(current.data?.redirect_uri)
      queryClient.setQueryData(["sso"], null)
    }
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const found: Partial<Record<Keys, string>> = {}
    if (!/^https:\/\/\S+$/.test(issuer.trim())) found.issuer = "The issuer is an https:// URL."
    if (clientId.trim() === "") found.client_id = "Enter the client ID the identity provider gave you."
    if (current.data === null && secret === "") found.client_secret = "Enter the client secret."
    const list = domains.split(/[\s,]+/).filter(Boolean)
    if (list.length === 0) found.domains = "Name at least one e-mail domain, e.g. example.com."
    setErrors(found)
    if (Object.keys(found).length > 0) return
    save.mutate({
      issuer: issuer.trim(),
      client_id: clientId.trim(),
      ...(secret !== "" ? { client_secret: secret } : {}),
      allowed_email_domains: list,
      enabled
    })
  }
  if (current.isPending) return <Loading />
  return (
    <section aria-labelledby="sso">
      <h2 id="sso">Single sign-on (OIDC)</h2>
      <ErrorNote error={current.error} />
      {current.data === null && <p>Not set up: people sign in with a password.</p>}
      {(current.data?.redirect_uri ?? setupUri) !== undefined && (
        <p className="snippet">
          Redirect URI to register at your identity provider:{" "}
          <code data-testid="redirect-uri">{current.data?.redirect_uri ?? setupUri}</code>
        </p>
      )}
      <form onSubmit={submit} noValidate className="form">
        <Field label="Issuer" error={errors.issuer}>
          {(p) => <input {...p} type="url" value={issuer} onChange={(e) => setIssuer(e.target.value)} />}
        </Field>
        <Field label="Client ID" error={errors.client_id}>
          {(p) => <input {...p} value={clientId} onChange={(e) => setClientId(e.target.value)} />}
        </Field>
        <Field
          label="Client secret"
          error={errors.client_secret}
          hint={current.data?.client_secret_set === true ? "Set; leave empty to keep it." : "Required"}
        >
          {(p) => (
            <input
              {...p}
              type="password"
              autoComplete="off"
              value={secret}
              onChange={(e) => setSecret(e.target.value)}
            />
          )}
        </Field>
        <Field label="Allowed email domains" error={errors.domains} hint="Comma-separated">
          {(p) => <input {...p} value={domains} onChange={(e) => setDomains(e.target.value)} />}
        </Field>
        <label className="check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Enabled
        </label>
        <p className="muted">Turning it off, or removing it, signs out everyone who signed in through it.</p>
        <ErrorNote error={save.error ?? remove.error} />
        <button type="submit" className="primary" disabled={save.isPending}>Save single sign-on</button>
        {current.data && <button type="button" className="danger" onClick={() => remove.mutate()}>Remove</button>}
      </form>
    </section>
  )
}
