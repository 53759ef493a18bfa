import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { ApiKey, ApiKeyList, CreateApiKey, CreatedApiKey } from "../../schema/Identity.js"
import { ApiKeyId } from "../../schema/Ids.js"
import { apiOptions, resolveTarget, withClient } from "./ApiTarget.js"
import { groupCommand } from "./Help.js"
import { fields, print, reportFailure, table, validated } from "./Output.js"
import { bold, sanitize } from "./Terminal.js"

const when = (date: Date | null) => date === null ? null : date.toISOString().slice(0, 19).replace("T", " ")

const keyFields = (key: ApiKey) =>
  [
    ["id", key.id],
    ["name", key.name],
    ["kind", key.kind],
    ["role", key.role],
    ["prefix", key.prefix],
    ["user", key.user_id],
    ["agents", key.agent_ids === null ? "all" : key.agent_ids.join(", ")],
    ["created", when(key.created_at)],
    ["last used", when(key.last_used_at)],
    ["revoked", when(key.revoked_at)]
  ] as const

const create = Command.make(
  "create",
  {
    ...apiOptions,
    name: Options.text("name").pipe(Options.withPseudoName("NAME"), Options.withDescription("What the key is for.")),
    kind: Options.choice("kind", ["personal", "organization"]).pipe(
      Options.withDescription("personal: acts as you. organization: for applications, optionally limited to agents."),
      Options.withDefault("personal" as const)
    ),
    role: Options.choice("role", ["super_admin", "admin", "builder", "member"]).pipe(
      Options.withDescription("Role of an organization key (default member; never above yours)."),
      Options.optional
    ),
    agents: Options.text("agent").pipe(
      Options.withPseudoName("AGENT_ID"),
      Options.withDescription("Organization keys: limit the key to this agent id (repeat for several)."),
      Options.repeated,
      Options.optional
    )
  },
  (options) =>
    Effect.gen(function*() {
      const target = yield* resolveTarget(options)
      const payload = yield* validated(CreateApiKey, {
        name: options.name,
        kind: options.kind,
        ...Option.match(options.role, { onNone: () => ({}), onSome: (role) => ({ role }) }),
        ...Option.match(Option.filter(options.agents, (ids) => ids.length > 0), {
          onNone: () => ({}),
          onSome: (agent_ids) => ({ agent_ids })
        })
      })
      const created = yield* withClient(target, (client) => client.identity.createApiKey({ payload }))
      yield* print(options.json, CreatedApiKey, created, (key, colour) =>
        fields(colour, keyFields(key)) +
        `\n${bold(colour, "API key")} (shown once, store it now):\n\n  ${key.api_key}\n\n`)
    }).pipe(reportFailure(options.json))
).pipe(Command.withDescription("Create an API key (POST /v1/api-keys) and print it: the secret is shown once."))

const list = Command.make("list", apiOptions, (options) =>
  Effect.gen(function*() {
    const target = yield* resolveTarget(options)
    const keys = yield* withClient(target, (client) => client.identity.listApiKeys({ urlParams: {} }))
    yield* print(options.json, ApiKeyList, keys, (keys, colour) =>
      table(
        colour,
        ["ID", "NAME", "KIND", "ROLE", "PREFIX", "CREATED", "LAST USED", "REVOKED"],
        keys.items.map((k) => [
          k.id,
          k.name,
          k.kind,
          k.role,
          k.prefix,
          when(k.created_at),
          when(k.last_used_at),
          when(k.revoked_at)
        ])
      ))
  }).pipe(reportFailure(options.json))).pipe(
    Command.withDescription(
      "List the organization's API keys you may see (GET /v1/api-keys): Admins see all, others their own."
    )
  )

const revoke = Command.make(
  "revoke",
  { ...apiOptions, id: Args.text({ name: "KEY_ID" }).pipe(Args.withDescription("The key's id (see keys list).")) },
  (options) =>
    Effect.gen(function*() {
      const target = yield* resolveTarget(options)
      const key_id = yield* validated(ApiKeyId, options.id, "KEY_ID")
      const revoked = yield* withClient(target, (client) => client.identity.revokeApiKey({ path: { key_id } }))
      yield* print(options.json, ApiKey, revoked, (key) => `Revoked key ${key.id} ("${sanitize(key.name)}").\n`)
    }).pipe(reportFailure(options.json))
).pipe(
  Command.withDescription("Revoke an API key (DELETE /v1/api-keys/{id}): requests with it fail with 401 from then on.")
)

export const keysCommand = groupCommand("keys", "API keys: create, list, revoke.", [create, list, revoke])
