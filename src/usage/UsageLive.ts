import { Layer } from "effect"
import { Usage } from "./Usage.js"
import { UsageFolderLive } from "./UsageFolder.js"

/** Usage: the reports the API and the MCP tool read, and this node's folder of the rollups (UsageFolder.ts). */
export const UsageLive = Layer.merge(Usage.Default, UsageFolderLive)
