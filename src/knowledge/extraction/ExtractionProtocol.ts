import type { DocumentFormat } from "../../../schema/KnowledgeBases.js"
import type { Block } from "../Chunker.js"
import type { ExtractionFailed } from "../TextExtraction.js"

/** A document to read: its bytes are transferred to the worker. */
export interface ExtractionJob {
  readonly format: DocumentFormat
  readonly bytes: Uint8Array
}

/** How far reading has come (0–1), then once the blocks or why there are none. */
export type FromExtraction =
  | { readonly progress: number }
  | { readonly blocks: Array<Block> }
  | { readonly failed: Pick<ExtractionFailed, "reason" | "message"> }
