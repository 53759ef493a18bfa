/**
 * How every request body is read (spread into its schema's annotations): each problem reported, not only the
 * first, and a field the contract does not name refused (`is unexpected`), as the document's
 * `additionalProperties: false` says, not dropped unseen (an unsupported field, such as an `expires_at` on a key,
 * would otherwise look accepted). The HttpApi stack, the fast paths and the clients read a body alike; nested
 * objects inherit it.
 */
export const requestBody = { parseOptions: { errors: "all", onExcessProperty: "error" } } as const
