import { Effect } from "effect"
import { CliFailure } from "./CliFailure.js"

/** All of standard input as text (a secret or a prompt piped in: `… | switchyard login`). */
export const readStdin: Effect.Effect<string, CliFailure> = Effect.tryPromise({
  try: async () => {
    const chunks: Array<Buffer> = []
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks).toString("utf8")
  },
  catch: (e) => CliFailure.usage(`cannot read standard input: ${String(e)}`)
})
