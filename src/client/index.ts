import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../../schema/Api.js"

export * from "../../schema/Ids.js"
// every id a path takes, so a caller brands it as the contract does (`FileId.make(id)`)
export { GroupId } from "../../schema/Access.js"
export { FileId } from "../../schema/Files.js"
export { FunctionId } from "../../schema/Functions.js"
export { DocumentId, KnowledgeBaseId } from "../../schema/KnowledgeBases.js"
export { OAuthGrantId } from "../../schema/OAuth.js"
export { ApprovalId, SkillId } from "../../schema/Skills.js"
export { DeliveryId, WebhookId } from "../../schema/Webhooks.js"
export { createFetchClient } from "./fetch.js"
export type { ClientOptions } from "./fetch.js"

/**
 * The Effect client derived from `schema/` (HttpApiClient): the same schemas the server decodes with, so a
 * response that does not match fails to decode instead of passing through untyped. The key goes in
 * `x-api-key`, the one header REST takes.
 */
export const makeClient = (options: { readonly baseUrl: string; readonly apiKey?: string | undefined }) =>
  HttpApiClient.make(Api, {
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    transformClient: (client) =>
      options.apiKey === undefined
        ? client
        : HttpClient.mapRequest(client, HttpClientRequest.setHeader("x-api-key", options.apiKey))
  })

/** `makeClient` over the global `fetch`. */
export const makeFetchBackedClient = (options: { readonly baseUrl: string; readonly apiKey?: string | undefined }) =>
  makeClient(options).pipe(Effect.provide(FetchHttpClient.layer))
