import { Duration, Effect, Fiber, Schedule } from "effect"
import { dim, Terminal } from "./Terminal.js"

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

/**
 * A long step told on stderr (stdout stays the command's output): on a terminal one line that counts the
 * seconds and is replaced by the outcome; elsewhere a line when it starts and one when it ends, except with
 * `--json`, whose stderr carries only the error envelope a script parses.
 */
export const withProgress = (label: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Terminal, (t) => {
    if (t.json && !t.interactiveErr) return effect
    const started = Date.now()
    const line = (text: string) => t.interactiveErr ? `\r\x1b[2K${text}` : `${text}\n`
    const tick = Effect.sync(() => t.err(`\r\x1b[2K${label}… ${dim(t.colourErr, seconds(Date.now() - started))}`))
    return Effect.gen(function*() {
      if (!t.interactiveErr) t.err(`${label}…\n`)
      const ticker = t.interactiveErr
        ? yield* Effect.fork(Effect.repeat(tick, Schedule.spaced(Duration.millis(200))))
        : undefined
      const stop = (outcome: string) =>
        Effect.zipRight(
          ticker === undefined ? Effect.void : Fiber.interrupt(ticker),
          Effect.sync(() =>
            t.err(line(`${label}: ${outcome} (${seconds(Date.now() - started)})`) + (t.interactiveErr ? "\n" : ""))
          )
        )
      return yield* effect.pipe(
        Effect.tapErrorCause(() => stop("failed")),
        Effect.tap(() => stop("done"))
      )
    })
  })
