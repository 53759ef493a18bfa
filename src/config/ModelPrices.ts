import { Either, ParseResult, Schema } from "effect"

const shown = (issue: ParseResult.ParseIssue) => JSON.stringify(issue.actual) ?? String(issue.actual)

const usd = { message: (issue: ParseResult.ParseIssue) => `must be a number, 0 or more (not ${shown(issue)})` }
const Usd = Schema.Number.annotations(usd).pipe(Schema.nonNegative(usd))

/** USD per million tokens. */
export const Price = Schema.Struct({
  input: Usd,
  output: Usd,
  cached_input: Schema.optionalWith(Usd, { exact: true })
}).annotations({
  message: (issue) => `must be an object with numeric "input" and "output" (not ${shown(issue)})`
})
export type Price = typeof Price.Type

/** SWITCHYARD_MODEL_PRICES: prices by model name, over the built-in list prices (src/agents/Prices.ts). */
export const ModelPrices = Schema.Record({ key: Schema.String, value: Price }).annotations({
  message: (issue) => `must be an object of prices by model name (not ${shown(issue)})`
})
export type ModelPrices = typeof ModelPrices.Type

const EXAMPLE = `{"my-model": {"input": 0.5, "output": 1.5, "cached_input": 0.1}}`

const where = ([model, ...field]: ReadonlyArray<PropertyKey>) =>
  model === undefined ? "" : `model ${JSON.stringify(model)}${field.length > 0 ? `: ${JSON.stringify(field[0])}` : ""} `

/**
 * SWITCHYARD_MODEL_PRICES parsed, or what is wrong with it (the first problem, with where it is). Empty text is
 * no overrides.
 */
export const parseModelPrices = (text: string): Either.Either<ModelPrices, string> => {
  if (text.trim() === "") return Either.right({})
  const wrong = (detail: string) => `${detail}; expected JSON such as ${EXAMPLE} (USD per million tokens)`
  return Schema.decodeUnknownEither(Schema.parseJson())(text).pipe(
    Either.mapLeft((e) => wrong(`not JSON (${ParseResult.ArrayFormatter.formatErrorSync(e)[0]?.message})`)),
    Either.flatMap((json) =>
      Schema.decodeUnknownEither(ModelPrices)(json).pipe(Either.mapLeft((e) => {
        const issue = ParseResult.ArrayFormatter.formatErrorSync(e)[0]
        return wrong(issue === undefined ? "not valid" : `${where(issue.path)}${issue.message}`)
      }))
    )
  )
}
