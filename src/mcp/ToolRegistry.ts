import { Effect, type Either, type ParseResult, Schema } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import type { McpTool } from "./McpTool.js"
import { toolInputSchema, toolOutputSchema } from "./ToolSchema.js"

const TOOLS_DIR = Path.join(import.meta.dirname, "tools")

/** `tools/list` entry: the JSON Schema comes from the tool's Effect Schema, the contract's own shapes. */
export const describe = (tool: McpTool) => ({
  name: tool.name,
  title: tool.annotations.title,
  description: tool.description,
  inputSchema: toolInputSchema(tool.input),
  outputSchema: toolOutputSchema(tool.output),
  annotations: tool.annotations
})

export interface LoadedTool {
  readonly tool: McpTool
  readonly decode: (input: unknown) => Effect.Effect<any, ParseResult.ParseError>
  readonly encode: (output: unknown) => Effect.Effect<unknown, ParseResult.ParseError>
  /** The same, synchronously (tool schemas have no asynchronous parts), for the fast path. */
  readonly decodeEither: (input: unknown) => Either.Either<any, ParseResult.ParseError>
  readonly encodeEither: (output: unknown) => Either.Either<unknown, ParseResult.ParseError>
}

/**
 * Every module in `tools/` is a tool (its default export): adding a tool is adding one file. Loaded once
 * at start-up, with the `tools/list` answer built then, off the request path.
 */
export const loadTools = Effect.promise(async () => {
  const files = Fs.readdirSync(TOOLS_DIR)
    .filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith(".d.ts"))
    .sort()
  const tools: Array<McpTool> = []
  for (const file of files) {
    const module = await import(pathToFileURL(Path.join(TOOLS_DIR, file)).href)
    const tool = module.default as McpTool | undefined
    if (tool === undefined || typeof tool.name !== "string") throw new Error(`src/mcp/tools/${file}: no default tool`)
    if (tools.some((t) => t.name === tool.name)) throw new Error(`two MCP tools are named ${tool.name}`)
    tools.push(tool)
  }
  return registryOf(tools)
})

/** A registry of the given tools (the built-in agent's endpoint has its own). */
export const registryOf = (tools: ReadonlyArray<McpTool>) => {
  const byName = new Map<string, LoadedTool>(
    tools.map((tool) => [tool.name, {
      tool,
      decode: Schema.decodeUnknown(tool.input, { errors: "all", onExcessProperty: "error" }),
      encode: Schema.encodeUnknown(tool.output),
      decodeEither: Schema.decodeUnknownEither(tool.input, { errors: "all", onExcessProperty: "error" }),
      encodeEither: Schema.encodeUnknownEither(tool.output)
    }])
  )
  return { byName, list: tools.map(describe) }
}
export type ToolRegistry = ReturnType<typeof registryOf>
