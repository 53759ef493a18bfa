import { HttpServerResponse } from "@effect/platform"
import type { Cookie } from "@effect/platform/Cookies"

export const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** Tagged template that escapes every interpolated value unless it is already `Html`. */
export class Html {
  constructor(readonly text: string) {}
}
export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>) =>
  new Html(
    strings.reduce((out, s, i) => {
      const v = i === 0 ? "" : values[i - 1]
      const text = v instanceof Html
        ? v.text
        : Array.isArray(v)
        ? v.map((x) => (x instanceof Html ? x.text : escape(String(x)))).join("")
        : escape(String(v ?? ""))
      return out + text + s
    }, "")
  )

const STYLE = "body{font:16px/1.5 system-ui,sans-serif;max-width:30rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}" +
  "h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem}input,select{width:100%;padding:.5rem;font:inherit;" +
  "box-sizing:border-box}button{padding:.55rem 1.2rem;font:inherit;margin:1rem .5rem 0 0;cursor:pointer}" +
  ".primary{background:#1d4ed8;color:#fff;border:0;border-radius:4px}.warn{background:#fff7e0;border:1px solid #e0b000;" +
  "padding:.6rem;border-radius:4px}.error{color:#b00020}dt{font-weight:600;margin-top:.6rem}dd{margin:0;overflow-wrap:anywhere}" +
  ".link{background:none;border:0;color:#1d4ed8;padding:0;text-decoration:underline}"

/**
 * A server-rendered page: no script at all, no framing (`frame-ancestors 'none'`, against clickjacking of
 * the consent button), nothing cached, no referrer leaking the authorization request to other sites.
 * (`same-origin`, not `no-referrer`: under `no-referrer` browsers send `Origin: null` with the form posts,
 * and the pages check that the Origin is their own.)
 */
export const page = (
  title: string,
  body: Html,
  options: { readonly status?: number; readonly cookies?: ReadonlyArray<SetCookie> } = {}
) => {
  const response = HttpServerResponse.text(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)} · Switchyard</title>` +
      `<meta name="viewport" content="width=device-width,initial-scale=1"><style>${STYLE}</style></head>` +
      `<body>${body.text}</body></html>`,
    {
      status: options.status ?? 200,
      contentType: "text/html; charset=utf-8",
      headers: {
        "content-security-policy":
          "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        "cache-control": "no-store",
        "referrer-policy": "same-origin"
      }
    }
  )
  return withCookies(response, options.cookies ?? [])
}

/** name, value, max age in seconds (0 deletes); the page module decides names and the Secure flag. */
export type SetCookie = readonly [name: string, value: string, options: Cookie["options"]]

export const withCookies = (response: HttpServerResponse.HttpServerResponse, cookies: ReadonlyArray<SetCookie>) =>
  cookies.length === 0 ? response : HttpServerResponse.unsafeSetCookies(response, cookies)

/** A 303 after a form post: the browser follows with GET. */
export const seeOther = (location: string, cookies: ReadonlyArray<SetCookie> = []) =>
  withCookies(
    HttpServerResponse.empty({
      status: 303,
      headers: { location, "cache-control": "no-store", "referrer-policy": "no-referrer" }
    }),
    cookies
  )
