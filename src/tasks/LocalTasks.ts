import { Effect } from "effect"
import type { TaskRow } from "./TaskRepo.js"

const HANDOFF_TTL_MS = 30_000

/**
 * Rows just inserted by an invoke on this node, handed to the local run so that a fresh run does not
 * read back what was just written.
 */
export class LocalTasks extends Effect.Service<LocalTasks>()("tasks/LocalTasks", {
  sync: () => {
    const handoff = new Map<string, { readonly row: TaskRow; readonly at: number }>()
    return {
      offer: (row: TaskRow) => {
        const now = Date.now()
        // rows nobody took (the run went elsewhere) age out; the Map iterates oldest first
        for (const [id, entry] of handoff) {
          if (now - entry.at < HANDOFF_TTL_MS) break
          handoff.delete(id)
        }
        handoff.set(row.id, { row, at: now })
      },
      take: (id: string): TaskRow | undefined => {
        const entry = handoff.get(id)
        handoff.delete(id)
        return entry?.row
      }
    }
  }
}) {}
