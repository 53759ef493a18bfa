import { type InfiniteData, useInfiniteQuery } from "@tanstack/react-query"
import { type ReactNode, useEffect, useId, useState } from "react"
import { ApiError } from "./api.js"

export const PageTitle = ({ children, actions }: { readonly children: string; readonly actions?: ReactNode }) => {
  useEffect(() => {
    document.title = `${children} · Switchyard`
  }, [children])
  return (
    <div className="page-title">
      <h1>{children}</h1>
      {actions}
    </div>
  )
}

/** The API's own message (and code), or the browser's when the call never reached the server. */
export const ErrorNote = ({ error }: { readonly error: unknown }) => {
  if (error === null || error === undefined) return null
  // fetch rejects with a TypeError ("Failed to fetch") when no answer came at all
  const message = error instanceof TypeError
    ? `Could not reach the Switchyard node (${error.message}). Check your connection and that the node is running, then try again.`
    : error instanceof Error
    ? error.message
    : String(error)
  return (
    <div className="error" role="alert">
      {message}
      {error instanceof ApiError && <span className="code">({error.code})</span>}
    </div>
  )
}

export const Empty = ({ title, children }: { readonly title: string; readonly children?: ReactNode }) => (
  <div className="empty">
    <p className="empty-title">{title}</p>
    {children !== undefined && <div>{children}</div>}
  </div>
)

export const Loading = () => <p className="muted" role="status">Loading…</p>

/** A labelled form field; `error` is tied to the input for screen readers. */
export const Field = ({ label, error, hint, children }: {
  readonly label: string
  readonly error?: string | undefined
  readonly hint?: string
  readonly children: (props: { id: string; "aria-invalid"?: boolean; "aria-describedby"?: string }) => ReactNode
}) => {
  const id = useId()
  const described = [hint !== undefined ? `${id}-hint` : "", error !== undefined ? `${id}-error` : ""].filter(Boolean)
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({
        id,
        ...(error !== undefined ? { "aria-invalid": true } : {}),
        ...(described.length > 0 ? { "aria-describedby": described.join(" ") } : {})
      })}
      {hint !== undefined && <div className="hint" id={`${id}-hint`}>{hint}</div>}
      {error !== undefined && <div className="field-error" id={`${id}-error`}>{error}</div>}
    </div>
  )
}

export type Errors<K extends string> = Partial<Record<K, string>>

export const time = (iso: string | null | undefined) =>
  iso === null || iso === undefined ? "—" : new Date(iso).toLocaleString()
export const usd = (n: number) => `$${n.toFixed(n !== 0 && n < 0.01 ? 6 : 2)}`

export const Status = ({ value }: { readonly value: string }) =>
  <span className={`status status-${value}`}>{value}</span>

/** A page of a cursor-paged list: `fetchPage(cursor)` returns items and `next_cursor`. */
export function usePaged<T>(
  key: ReadonlyArray<unknown>,
  fetchPage: (cursor: string | undefined) => Promise<{ items: ReadonlyArray<T>; next_cursor?: string | null }>,
  options: { readonly refetchInterval?: number | false } = {}
) {
  const query = useInfiniteQuery<
    { items: ReadonlyArray<T>; next_cursor?: string | null },
    Error,
    InfiniteData<{ items: ReadonlyArray<T>; next_cursor?: string | null }>,
    ReadonlyArray<unknown>,
    string | undefined
  >({
    queryKey: key,
    queryFn: ({ pageParam }) => fetchPage(pageParam),
    initialPageParam: undefined,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    refetchInterval: options.refetchInterval ?? false
  })
  const items = query.data?.pages.flatMap((p) => p.items) ?? []
  return { ...query, items }
}

export const MoreButton = (
  { query }: {
    readonly query: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => unknown }
  }
) =>
  query.hasNextPage
    ? (
      <button type="button" className="more" onClick={() => query.fetchNextPage()} disabled={query.isFetchingNextPage}>
        {query.isFetchingNextPage ? "Loading…" : "Load more"}
      </button>
    )
    : null

/** A secret shown once, with a copy button (the API never shows it again). */
export const ShowOnce = ({ label, value }: { readonly label: string; readonly value: string }) => {
  const [copied, setCopied] = useState(false)
  return (
    <div className="once" role="status">
      <p>
        <strong>{label}</strong> — copy it now: it is shown only once.
      </p>
      <code className="secret" data-testid="secret">{value}</code>
      <button
        type="button"
        onClick={() => navigator.clipboard?.writeText(value).then(() => setCopied(true), () => setCopied(false))}
      >
        {copied ? "Copied" : "Copy"}
      </button>
    </div>
  )
}

/** A value as indented JSON; a string that holds JSON (a tool's result) is shown indented too. */
export const Json = ({ value }: { readonly value: unknown }) => {
  let shown = value
  if (typeof value === "string") {
    try {
      shown = JSON.parse(value)
    } catch {
      return <pre className="json" tabIndex={0}>{value}</pre>
    }
  }
  // focusable: a long value scrolls inside its box, which keyboard users must be able to scroll
  return <pre className="json" tabIndex={0}>{JSON.stringify(shown, null, 2)}</pre>
}

/** Parses a JSON text field: the value, or a message for the field. */
export const parseJson = (text: string): { value?: unknown; error?: string } => {
  if (text.trim() === "") return { value: undefined }
  try {
    return { value: JSON.parse(text) }
  } catch (e) {
    return { error: `Not valid JSON: ${(e as Error).message}` }
  }
}
