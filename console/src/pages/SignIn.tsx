import { useMutation } from "@tanstack/react-query"
import { type FormEvent, useState } from "react"
import { type Session, signIn } from "../api.js"
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
        <ErrorNote error={mutation.error} />
        <button type="submit" className="primary" disabled={mutation.isPending}>Sign in</button>
      </form>
      <p className="muted">
        No password? An Admin adds you as a member; set a password with <code>switchyard users set-password</code>.
      </p>
    </main>
  )
}
