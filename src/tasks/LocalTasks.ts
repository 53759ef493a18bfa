import { Effect } from "effect"
import type { Attachments, TaskRow } from "./TaskRepo.js"

const HANDOFF_TTL_MS = 30_000

export interface Handoff {
  readonly row: TaskRow
  /** Set when the row was inserted started. */
  readonly attached: Attachments | undefined
}

/**
 * Rows just inserted by an invoke on this node, handed to the local run so that a fresh run does not
 * read back what was just written. A row inserted already started comes with the agent's attachments
 * its insert read (the start's other half).
 */
export class LocalTasks extends Effect.Service<LocalTasks>()("tasks/LocalTasks", {
  sync: () => {
    const handoff = new Map<string, Handoff & { readonly at: number }>()
    return {
      offer: (row: TaskRow, attached?: Attachments) => {
        const now = Date.now()
        // rows nobody took (the run went elsewhere) age out; the Map iterates oldest first
        for (const [id, entry] of handoff) {
          if (now - entry.at < HANDOFF_TTL_MS) break
          handoff.delete(id)
        }
        handoff.set(row.id, { row, attached, at: now })
      },
      take: (id: string): Handoff | undefined => {
        const entry = handoff.get(id)
        handoff.delete(id)
        return entry
      }
    }
  }
}) {}
