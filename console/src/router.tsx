import { type AnchorHTMLAttributes, type MouseEvent, useEffect, useState } from "react"

export const BASE = "/console"

const current = () => {
  const path = window.location.pathname.slice(BASE.length).replace(/\/+$/, "")
  return path === "" ? "/" : path
}

const listeners = new Set<() => void>()

/** Goes to a page of the console (a path after /console, with its query) without reloading. */
export const navigate = (to: string, options: { readonly replace?: boolean } = {}) => {
  const url = `${BASE}${to === "/" ? "/" : to}`
  if (options.replace === true) window.history.replaceState(null, "", url)
  else window.history.pushState(null, "", url)
  listeners.forEach((l) => l())
}

/** The current page's path (after /console) and query, re-rendering on navigation and on back/forward. */
export const useLocation = () => {
  const [, setTick] = useState(0)
  useEffect(() => {
    const update = () => setTick((t) => t + 1)
    listeners.add(update)
    window.addEventListener("popstate", update)
    return () => {
      listeners.delete(update)
      window.removeEventListener("popstate", update)
    }
  }, [])
  return { path: current(), query: new URLSearchParams(window.location.search) }
}

/** A link to a console page: a real `<a href>` (keyboard, new tab, screen readers) that navigates in place. */
export const Link = ({ to, ...rest }: { readonly to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) => (
  <a
    {...rest}
    href={`${BASE}${to}`}
    onClick={(e: MouseEvent<HTMLAnchorElement>) => {
      rest.onClick?.(e)
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
      e.preventDefault()
      navigate(to)
    }}
  />
)

/** `/agents/:id` against `/agents/abc` → `{ id: "abc" }`; undefined when it does not match. */
export const match = (pattern: string, path: string): Record<string, string> | undefined => {
  const p = pattern.split("/")
  const s = path.split("/")
  if (p.length !== s.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < p.length; i++) {
    if (p[i]!.startsWith(":")) params[p[i]!.slice(1)] = decodeURIComponent(s[i]!)
    else if (p[i] !== s[i]) return undefined
  }
  return params
}
