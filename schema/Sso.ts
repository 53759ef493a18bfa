import { Schema } from "effect"
import { GroupId } from "./Access.js"
import { requestBody } from "./RequestBody.js"
import { Timestamp } from "./Timestamp.js"

/** An https issuer, or http on a loopback host (a development IdP on this machine). */
export const IssuerUrl = Schema.Trim.pipe(
  Schema.maxLength(2000),
  Schema.filter((s) => {
    try {
      const url = new URL(s)
      const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)
      if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) {
        return "must be an https URL (http only on 127.0.0.1, [::1] or localhost)"
      }
      if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
        return "must have no query, fragment or credentials"
      }
      return true
    } catch {
      return "must be a URL like https://login.example.com/realms/acme"
    }
  }),
  Schema.transform(Schema.String, { strict: true, decode: (s) => s.replace(/\/+$/, ""), encode: (s) => s })
).annotations({
  description: "The identity provider's issuer; `{issuer}/.well-known/openid-configuration` must describe it."
})

export const EmailDomain = Schema.Trim.pipe(
  Schema.transform(Schema.String, { strict: true, decode: (s) => s.toLowerCase(), encode: (s) => s }),
  Schema.pattern(/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/, {
    message: () => "must be a domain name like acme.com"
  })
).annotations({ description: "An e-mail domain (the part after `@`), e.g. `acme.com`." })

export const SsoGroupMapping = Schema.Struct({
  idp_group: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(500)).annotations({
    description: "A value of the group claim, as the identity provider sends it (case-sensitive)."
  }),
  group_id: GroupId.annotations({ description: "The Switchyard group its members belong to." })
}).annotations({ identifier: "SsoGroupMapping" })
export type SsoGroupMapping = typeof SsoGroupMapping.Type

const ClaimName = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))

export class SsoSettings extends Schema.Class<SsoSettings>("SsoSettings")({
  issuer: Schema.String,
  client_id: Schema.String,
  client_secret_set: Schema.Boolean.annotations({
    description: "Whether a client secret is stored. The secret itself is never returned."
  }),
  allowed_email_domains: Schema.Array(Schema.String),
  group_claim: Schema.String,
  group_mapping: Schema.Array(SsoGroupMapping),
  enabled: Schema.Boolean,
  redirect_uri: Schema.String.annotations({
    description: "Register this exact address as the redirect URI of the client at the identity provider."
  }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const PutSsoSettings = Schema.Struct({
  issuer: IssuerUrl,
  client_id: Schema.Trim.pipe(Schema.minLength(1), Schema.maxLength(500)).annotations({
    description: "The client id Switchyard was registered with at the identity provider."
  }),
  client_secret: Schema.optional(Schema.Redacted(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(4000))))
    .annotations({
      description: "Its client secret (write-only, stored encrypted). Required the first time; " +
        "leave it out to keep the stored one."
    }),
  allowed_email_domains: Schema.Array(EmailDomain).pipe(Schema.minItems(1), Schema.maxItems(100)).annotations({
    description: "Only people whose verified e-mail is in one of these domains may sign in."
  }),
  group_claim: Schema.optionalWith(ClaimName, { default: () => "groups" }).annotations({
    description: "The ID token (or userinfo) claim that lists the person's groups. Default `groups`."
  }),
  group_mapping: Schema.optionalWith(Schema.Array(SsoGroupMapping).pipe(Schema.maxItems(1000)), {
    default: () => []
  }).annotations({
    description: "Identity-provider group → Switchyard group. Synced on every sign-in: a person is added to the " +
      "mapped groups they are in and removed from the mapped groups they are no longer in."
  }),
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true })
}).annotations({ identifier: "PutSsoSettings", ...requestBody })
export type PutSsoSettings = typeof PutSsoSettings.Type
