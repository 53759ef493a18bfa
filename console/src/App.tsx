import { useMutation, useQuery } from "@tanstack/react-query"
import { lazy, type ReactNode, Suspense, useEffect, useRef, useState } from "react"
import {
  loadSession,
  type Role,
  roleAtLeast,
  roleNames,
  type Session,
  setSession,
  signOut,
  switchOrganization
} from "./api.js"
import { SignIn } from "./pages/SignIn.js"
import { Link, match, navigate, useLocation } from "./router.js"
import { SessionContext } from "./session.js"
import { ErrorNote, Loading } from "./ui.js"

const Overview = lazy(() => import("./pages/Overview.js"))
const Agents = lazy(() => import("./pages/Agents.js"))
const AgentPage = lazy(() => import("./pages/AgentPage.js"))
const Tasks = lazy(() => import("./pages/Tasks.js"))
const TaskPage = lazy(() => import("./pages/TaskPage.js"))
const Connectors = lazy(() => import("./pages/Connectors.js"))
const ConnectorPage = lazy(() => import("./pages/ConnectorPage.js"))
const Skills = lazy(() => import("./pages/Skills.js"))
const Approvals = lazy(() => import("./pages/Approvals.js"))
const Settings = lazy(() => import("./pages/Settings.js"))
const AuditLog = lazy(() => import("./pages/AuditLog.js"))
const Schedules = lazy(() => import("./pages/Schedules.js"))
const Files = lazy(() => import("./pages/Files.js"))
const Webhooks = lazy(() => import("./pages/Webhooks.js"))
const KnowledgeBases = lazy(() => import("./pages/KnowledgeBases.js"))
const KnowledgeBasePage = lazy(() => import("./pages/KnowledgeBasePage.js"))
const Functions = lazy(() => import("./pages/Functions.js"))
const FunctionPage = lazy(() => import("./pages/FunctionPage.js"))

interface NavItem {
  readonly to: string
  readonly label: string
  readonly minimum: Role
}

/** The pages, and the least role that may use each (as the API decides: the console only mirrors it). */
export const NAV: ReadonlyArray<NavItem> = [
  { to: "/", label: "Overview", minimum: "member" },
  { to: "/agents", label: "Agents", minimum: "member" },
  { to: "/tasks", label: "Tasks", minimum: "member" },
  { to: "/connectors", label: "Connectors", minimum: "member" },
  { to: "/skills", label: "Skills", minimum: "member" },
  { to: "/schedules", label: "Schedules", minimum: "member" },
  { to: "/files", label: "Files", minimum: "member" },
  { to: "/knowledge-bases", label: "Knowledge bases", minimum: "member" },
  { to: "/functions", label: "Functions", minimum: "member" },
  { to: "/approvals", label: "Approvals", minimum: "admin" },
  { to: "/webhooks", label: "Webhooks", minimum: "admin" },
  { to: "/audit-log", label: "Audit log", minimum: "admin" },
  { to: "/settings", label: "Settings", minimum: "member" }
]

const route = (path: string): { element: ReactNode; minimum: Role } | undefined => {
  let m: Record<string, string> | undefined
  if (path === "/") return { element: <Overview />, minimum: "member" }
  if (path === "/agents") return { element: <Agents />, minimum: "member" }
  if ((m = match("/agents/:id", path))) return { element: <AgentPage id={m.id!} />, minimum: "member" }
  if (path === "/tasks") return { element: <Tasks />, minimum: "member" }
  if ((m = match("/tasks/:id", path))) return { element: <TaskPage id={m.id!} />, minimum: "member" }
  if (path === "/connectors") return { element: <Connectors />, minimum: "member" }
  if ((m = match("/connectors/:id", path))) return { element: <ConnectorPage id={m.id!} />, minimum: "member" }
  if (path === "/skills") return { element: <Skills />, minimum: "member" }
  if (path === "/approvals") return { element: <Approvals />, minimum: "admin" }
  if (path === "/schedules") return { element: <Schedules />, minimum: "member" }
  if (path === "/files") return { element: <Files />, minimum: "member" }
  if (path === "/knowledge-bases") return { element: <KnowledgeBases />, minimum: "member" }
  if ((m = match("/knowledge-bases/:id", path))) {
    return { element: <KnowledgeBasePage key={m.id} id={m.id!} />, minimum: "member" }
  }
  if (path === "/functions") return { element: <Functions />, minimum: "member" }
  if ((m = match("/functions/:id", path))) return { element: <FunctionPage key={m.id} id={m.id!} />, minimum: "member" }
  if (path === "/webhooks") return { element: <Webhooks />, minimum: "admin" }
  if (path === "/audit-log") return { element: <AuditLog />, minimum: "admin" }
  if (path === "/settings" || path.startsWith("/settings/")) {
    return { element: <Settings section={path.slice("/settings/".length) || "api-keys"} />, minimum: "member" }
  }
  return undefined
}

export const App = () => {
  const session = useQuery({ queryKey: ["session"], queryFn: loadSession, staleTime: Infinity })
  if (session.isPending) return <Loading />
  // (a failed re-check keeps the session it had: the pages' own calls tell what failed)
  if (session.data === undefined) {
    return (
      <main className="narrow">
        <ErrorNote error={session.error} />
        <button type="button" onClick={() => session.refetch()} disabled={session.isFetching}>Try again</button>
      </main>
    )
  }
  if (session.data === null) {
    return <SignIn onSignedIn={setSession} />
  }
  return (
    <SessionContext.Provider value={session.data}>
      {/* keyed: another organization's pages mount afresh, not over the last one's answers */}
      <Shell key={`${session.data.user.id}/${session.data.organization.id}`} session={session.data} />
    </SessionContext.Provider>
  )
}

const Shell = ({ session }: { readonly session: Session }) => {
  const { path } = useLocation()
  const [menuOpen, setMenuOpen] = useState(false)
  const main = useRef<HTMLElement>(null)
  const first = useRef(true)
  useEffect(() => {
    setMenuOpen(false)
    // after a navigation, keyboard and screen reader users start at the new page's content
    if (!first.current) main.current?.focus()
    first.current = false
  }, [path])
  const out = useMutation({
    mutationFn: signOut,
    onSuccess: () => {
      setSession(null)
      navigate("/", { replace: true })
    }
  })
  const switchOrg = useMutation({
    mutationFn: switchOrganization,
    onSuccess: (s) => {
      setSession(s)
      navigate("/")
    }
  })
  const page = route(path)
  const allowed = NAV.filter((n) => roleAtLeast(session.role, n.minimum))
  const active = (to: string) => to === "/" ? path === "/" : path === to || path.startsWith(`${to}/`)
  return (
    <div className="shell">
      <a className="skip" href="#main">Skip to content</a>
      <header className="top">
        <span className="brand">Switchyard</span>
        <button
          type="button"
          className="menu-button"
          aria-expanded={menuOpen}
          aria-controls="nav"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          Menu
        </button>
        <div className="who">
          {session.organizations.length > 1
            ? (
              <label>
                <span className="visually-hidden">Organization</span>
                <select value={session.organization.id} onChange={(e) => switchOrg.mutate(e.target.value)}>
                  {session.organizations.map((o) => <option key={o.id} value={o.id}>{o.name}</option>)}
                </select>
              </label>
            )
            : <span>{session.organization.name}</span>}
          <span className="muted">{session.user.email} · {roleNames[session.role]}</span>
          <button type="button" className="link" onClick={() => out.mutate()}>Sign out</button>
        </div>
      </header>
      <nav id="nav" aria-label="Main" className={menuOpen ? "open" : ""}>
        <ul>
          {allowed.map((n) => (
            <li key={n.to}>
              <Link to={n.to} aria-current={active(n.to) ? "page" : undefined}>{n.label}</Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" ref={main} tabIndex={-1}>
        <ErrorNote error={out.error ?? switchOrg.error} />
        <Suspense fallback={<Loading />}>
          {page === undefined
            ? <NotFound />
            : roleAtLeast(session.role, page.minimum)
            ? page.element
            : <Refused />}
        </Suspense>
      </main>
    </div>
  )
}

const NotFound = () => (
  <section>
    <h1>Page not found</h1>
    <p>
      There is no such page. <Link to="/">Go to the overview</Link>.
    </p>
  </section>
)

const Refused = () => (
  <section>
    <h1>Not available to your role</h1>
    <p>Ask an Admin of your organization if you need this page.</p>
  </section>
)
