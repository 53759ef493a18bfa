/**
 * The messages between the node and a sandbox worker (SandboxWorker.ts). Only strings and numbers cross:
 * the function's input, output and every host call's arguments travel as JSON text, so nothing of the host
 * (no object, prototype or secret) is ever handed to a function.
 */

/** One call of a function: its code, input (JSON text) and limits. */
export interface SandboxJob {
  readonly code: string
  readonly input: string
  /** The function's `input_schema` (JSON text): the input is checked in the worker, never on the node's loop. */
  readonly schema: string
  readonly timeoutMs: number
  readonly memoryMb: number
  readonly maxOutputBytes: number
  /** Only load the code (compile, evaluate the module, find its default export function) and call nothing. */
  readonly loadOnly?: boolean
}

export type FailureKind = "error" | "timeout" | "memory" | "output_too_large" | "invalid_input"

export interface SandboxLogs {
  readonly logs: ReadonlyArray<string>
  readonly logsTruncated: boolean
}

export type SandboxOutcome =
  | ({ readonly ok: true; readonly output: string } & SandboxLogs)
  | ({
    readonly ok: false
    readonly kind: FailureKind
    readonly message: string
    /** The function's stack lines (`at f (function.js:3:9)`), for `function_error`. */
    readonly stack?: string
    /** `invalid_input`: each failing field of the input. */
    readonly issues?: ReadonlyArray<{ readonly path: string; readonly message: string }>
  } & SandboxLogs)

/** A host call's failure as the function sees it: an Error with `code` (and `status` for a REST status). */
export interface HostFailure {
  readonly code: string
  readonly message: string
  readonly status?: number
}

export type ToWorker =
  | {
    readonly type: "run"
    readonly id: number
    readonly job: SandboxJob
    /** `Date.now()` at which the call is over: its timeout counts from when it was asked, not from here. */
    readonly deadline: number
  }
  | {
    readonly type: "host_result"
    readonly id: number
    readonly callId: number
    readonly ok: boolean
    readonly value?: string
    readonly error?: HostFailure
  }
  | { readonly type: "cancel"; readonly id: number }

export type FromWorker =
  | { readonly type: "ready" }
  | { readonly type: "host"; readonly id: number; readonly callId: number; readonly op: string; readonly args: string }
  | { readonly type: "done"; readonly id: number; readonly outcome: SandboxOutcome }

/** Caps a function cannot pass: its logs, and its host calls. */
export const MAX_LOG_LINES = 200
export const MAX_LOG_BYTES = 64 * 1024
export const MAX_LOG_LINE = 4 * 1024
export const MAX_HOST_CALLS = 1_000
export const MAX_HOST_ARGS_BYTES = 1024 * 1024
