import { Layer } from "effect"
import { AgentsLive } from "../agents/AgentsLive.js"
import { AuditLog } from "../audit/AuditLog.js"
import { Files } from "../files/Files.js"
import { FunctionCalls } from "./FunctionCalls.js"
import { FunctionRepo } from "./FunctionRepo.js"
import { Functions } from "./Functions.js"

/** Custom functions: the service the API and the MCP tools call, over this node's sandbox pool. */
export const FunctionsLive = Functions.Default.pipe(
  Layer.provideMerge(Layer.mergeAll(FunctionCalls.Default, FunctionRepo.Default, AuditLog.Default, Files.Default)),
  Layer.provideMerge(AgentsLive)
)
