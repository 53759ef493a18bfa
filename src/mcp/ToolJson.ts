/**
 * A result already in its wire form, with its JSON text: the protocol sends `json` as the structured content (and
 * its text block) as it is, without encoding `value` and serializing it again. The tool vouches that `json` is
 * the JSON of `value` encoded by its output schema (invoke_operation: the target's JSON body passed on as sent,
 * which a parse and a new serialization would only copy).
 */
export class ToolJson<O> {
  constructor(readonly value: O, readonly json: string) {}
}
