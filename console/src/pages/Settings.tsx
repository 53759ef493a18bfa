import { lazy, type ReactNode } from "react"
import { type Role, roleAtLeast } from "../api.js"
import { Link } from "../router.js"
import { useSession } from "../session.js"
import { PageTitle } from "../ui.js"
import { ApiKeys, McpAuthorizations } from "./SettingsKeys.js"

const Members = lazy(() => import("./SettingsMembers.js"))
const Groups = lazy(() => import("./SettingsGroups.js"))
const Sso = lazy(() => import("./SettingsSso.js"))
const ModelProviders = lazy(() => import("./SettingsProviders.js"))

const SECTIONS: ReadonlyArray<{ id: string; label: string; minimum: Role; element: () => ReactNode }> = [
  { id: "api-keys", label: "API keys", minimum: "member", element: () => <ApiKeys /> },
  { id: "members", label: "Members", minimum: "admin", element: () => <Members /> },
  { id: "groups", label: "Groups", minimum: "admin", element: () => <Groups /> },
  { id: "sso", label: "Single sign-on", minimum: "admin", element: () => <Sso /> },
  { id: "model-providers", label: "Model providers", minimum: "admin", element: () => <ModelProviders /> },
  { id: "mcp", label: "MCP authorizations", minimum: "member", element: () => <McpAuthorizations /> }
]

export default function Settings({ section }: { readonly section: string }) {
  const session = useSession()
  const allowed = SECTIONS.filter((s) => roleAtLeast(session.role, s.minimum))
  const current = SECTIONS.find((s) => s.id === section)
  return (
    <section>
      <PageTitle>Settings</PageTitle>
      <nav aria-label="Settings" className="subnav">
        <ul>
          {allowed.map((s) => (
            <li key={s.id}>
              <Link to={`/settings/${s.id}`} aria-current={s.id === section ? "page" : undefined}>{s.label}</Link>
            </li>
          ))}
        </ul>
      </nav>
      {current === undefined
        ? <p>No such settings page.</p>
        : roleAtLeast(session.role, current.minimum)
        ? current.element()
        : <p role="alert">This settings page is for Admins.</p>}
    </section>
  )
}
