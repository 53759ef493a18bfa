import { Config, ConfigError, Either, LogLevel } from "effect"
import * as Setting from "./Setting.js"

const LEVELS = new Map<string, LogLevel.LogLevel>([
  ["trace", LogLevel.Trace],
  ["debug", LogLevel.Debug],
  ["info", LogLevel.Info],
  ["warning", LogLevel.Warning],
  ["error", LogLevel.Error],
  ["none", LogLevel.None]
])

/**
 * SWITCHYARD_LOG_LEVEL (any case; empty is unset): the least severe log line written. Read by the command line
 * for every command (src/cli.ts), before the node's configuration.
 */
export const minimumLogLevel = Setting.string("SWITCHYARD_LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.mapOrFail((text) => {
    const level = LEVELS.get(text.trim().toLowerCase())
    return level === undefined
      ? Either.left(ConfigError.InvalidData(
        ["SWITCHYARD_LOG_LEVEL"],
        `must be one of ${[...LEVELS.keys()].join(", ")} (not ${JSON.stringify(text)})`
      ))
      : Either.right(level)
  })
)
