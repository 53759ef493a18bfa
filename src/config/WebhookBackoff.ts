import { Config, ConfigError, Either } from "effect"
import * as Setting from "./Setting.js"

/** `5s,1m,2h`: delays in milliseconds, or undefined when the text is not such a list. */
export const parseDelays = (text: string): ReadonlyArray<number> | undefined => {
  const parts = text.split(",").map((p) => p.trim())
  if (parts.length < 1 || parts.length > 20) return undefined
  const delays: Array<number> = []
  for (const part of parts) {
    const ms = Setting.compactMillis(part)
    if (ms === undefined) return undefined
    delays.push(ms)
  }
  return delays
}

/** SWITCHYARD_WEBHOOK_BACKOFF: the delay before each retry of a failed delivery (docs/guides/webhooks.md). */
export const webhookBackoff = (name: string) =>
  Setting.string(name).pipe(
    Config.withDefault("5s,1m,5m,30m,2h,6h,12h"),
    Config.mapOrFail((text) => {
      const delays = parseDelays(text)
      return delays === undefined
        ? Either.left(ConfigError.InvalidData(
          [name],
          "must be a comma-separated list of 1-20 delays such as 5s,1m,2h (units ms, s, m, h, d)"
        ))
        : Either.right(delays)
    })
  )
