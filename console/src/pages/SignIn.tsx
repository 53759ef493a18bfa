import { useMutation } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { type Session, signIn, type SsoStart, startSso } from "../api.js"
import { ErrorNote, type Errors, Field } from "../ui.js"

/** The password sign-in (the accounts and rate limits of the node's sign-in page). */
export const SignIn = ({ onSignedIn }: { readonly onSignedIn: (session: Session) => void }) => {
  const [email, setEmail] = useState("")
  const [password, setPassword] = useState("")
  const [errors, setErrors] = useState<Errors<"email" | "password">>({})
  const mutation = useMutation({
    mutationFn: () => signIn(email.trim(), password),
    onSuccess: (s) => s !== null && onSignedIn(s)
  })
  // single sign-on: the provider's page, then back to /console with a session
  const [organizations, setOrganizations] = useState<Extract<SsoStart, { organizations: unknown }>["organizations"]>(
    []
  )
  const sso = useMutation({
    mutationFn: (organizationId?: string) => startSso(email.trim(), organizationId),
    onSuccess: (started) => {
      if ("location" in started) window.location.assign(started.location)
      else setOrganizations(started.organizations)
    }
  })
  const withSso = () => {
    const valid = /^[^\s@]+@[^\s@]+$/.test(email.trim())
    setErrors(valid ? {} : { email: "Enter your work e-mail address to sign in with single sign-on." })
    if (valid) sso.mutate(undefined)
  }
  const submit = (e: FormEvent) => {
    e.preventDefault()
    const found: Errors<"email" | "password"> = {}
    if (!/^[^\s@]+@[^\s@]+$/.test(email.trim())) found.email = "Enter the e-mail address you sign in with."
    if (password === "") found.password = "Enter your password."
    setErrors(found)
    if (Object.keys(found).length === 0) mutation.mutate()
  }
  return (
    <main className="narrow" id="main">
      <h1>Sign in to Switchyard</h1>
      <form onSubmit={submit} noValidate>
        <Field label="Email" error={errors.email}>
          {(p) => (
            <input
              {...p}
              type="email"
              autoComplete="username"
              value={email}
              onChange={(e) => setEmail(e.target.value)}
            />
          )}
        </Field>
        <Field label="Password" error={errors.password}>
          {(p) => (
            <input
              {...p}
              type="password"
              autoComplete="current-password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
          )}
        </Field>
        <ErrorNote error={mutation.error ?? sso.error} />
        <button type="submit" className="primary" disabled={mutation.isPending}>Sign in</button>
        <button type="button" onClick={withSso} disabled={sso.isPending}>Sign in with SSO</button>
      </form>
      {organizations.length > 0 && (
        <section aria-label="Choose your organization">
          <p>Your e-mail domain signs in to several organizations: choose one.</p>
          <ul>
            {organizations.map((o) => (
              <li key={o.id}>
                <button type="button" onClick={() => sso.mutate(o.id)}>{o.name}</button>
              </li>
            ))}
          </ul>
        </section>
      )}
      <p className="muted">
        No password? An Admin adds you as a member; set a password with <code>switchyard users set-password</code>.
      </p>
    </main>
  )
}
