import { Effect } from "effect"

/** A piece of a model call's text, as the model generates it: not an event of the log, never stored. */
export interface OutputDelta {
  /** The run's step (its model call) the text belongs to: `task.model_call` of this step follows its pieces. */
  readonly step: number
  readonly text: string
  /**
   * How many of the task's step events (`task.model_call`, `task.tool_call`) were written before this step: a
   * streamed invoke sends the text after them, so a client never sees a step's answer before the calls that
   * led to it. Not sent.
   */
  readonly after: number
}

type Listener = (delta: OutputDelta) => void

/**
 * The node's channel of model text deltas, by task (a streamed invoke, src/events/InvokeStream.ts). In memory:
 * a task runs on the node that accepted its invoke (TaskPlacement), where its streamed invoke listens. A run's
 * model call asks for a stream only while someone here listens to its task (`sink`); otherwise it calls the model
 * as before. Should the run move to another node (its shard moved, or this node died), its deltas stop; its
 * events go on, read from the log by any node.
 */
export class TaskOutput extends Effect.Service<TaskOutput>()("events/TaskOutput", {
  sync: () => {
    const listeners = new Map<string, Set<Listener>>()

    /** Hears the task's deltas until the returned function is called. */
    const listen = (taskId: string, listener: Listener) => {
      const set = listeners.get(taskId)
      if (set === undefined) listeners.set(taskId, new Set([listener]))
      else set.add(listener)
      return () => {
        const current = listeners.get(taskId)
        current?.delete(listener)
        if (current?.size === 0) listeners.delete(taskId)
      }
    }

    /**
     * Where a model call of this step sends its text, when someone listens to the task now; undefined
     * otherwise (the call is not streamed). Listeners that join later hear the next call's text.
     */
    const sink = (taskId: string, step: number, after: number): ((text: string) => void) | undefined => {
      if (!listeners.has(taskId)) return undefined
      return (text) => {
        for (const listener of listeners.get(taskId) ?? []) listener({ step, text, after })
      }
    }

    return { listen, sink } as const
  }
}) {}
