import type { CallKind } from "./caps.js";
import type { FailureKind, RejectionKind } from "./failures.js";
import type { HookName } from "./hooks.js";
import type { KnownStopReason } from "./model.js";

/**
 * The closed vocabularies a host reads. One casing rule: lower snake_case words, joined by `:`
 * from the general to the particular (`call:main:invalid:none:text_delta`). The only exceptions
 * are the names the seeds spell themselves: `RUNTIME_MODEL_STREAM_INVALID` (an error code) and the
 * `TOOL_*` codes of the error observations the model reads.
 */

export type { AlmaErrorCode } from "./error-codes.js";

/** The rules of the model-stream validator, as `call:<kind>:invalid:none:<rule>` names them. */
export type StreamRule =
  | "calls_mismatch"
  | "duplicate_call_id"
  | "plain_data"
  | "provider_tool"
  | "provider_tool_result"
  | "reasoning_delta"
  | "shape"
  | "stop_reason"
  | "terminal_text"
  | "text_after_tool_calls"
  | "text_delta"
  | "text_mismatch"
  | "tool_call"
  | "unknown_event"
  | "usage";

/** What can go wrong with one model call, after `call:<kind>:`. */
export type CallCause =
  | "aborted"
  | "call_limit"
  | "deadline"
  | "empty"
  | "error"
  | "request_invalid"
  | "routing_unavailable"
  | "settlement_conflict"
  | "step_limit"
  | "torn:none"
  | `invalid:none:${StreamRule}`
  | `${FailureKind}:none`
  | `rejected:${RejectionKind | "context_window"}`
  | `unavailable:${KnownStopReason | "none" | "unknown"}`
  | `unsettled:${KnownStopReason | "none" | "unknown"}`;

/**
 * What the durable runner itself could not make certain. `admit` and `root_reserve`: the session's
 * admission or the root's reservation failed or lost its acknowledgement and the read-back could not
 * prove that nothing happened (or could not free the session); `expired`: maintenance released a
 * turn fifteen minutes past its deadline; `input`: an explicit root's `loadInput` threw, returned
 * what is not a valid input, or what does not match the root's revision (seed 002's "input" source).
 */
export type RunnerCause =
  | "input"
  | "session_load"
  | "session_append"
  | "result_store"
  | "root_store"
  | "admission_store"
  | "admit"
  | "root_reserve"
  | "expired"
  | "loop";

/**
 * Why a turn ended `reconciliation_required`, as `onUncertainTurn` and the lifecycle trail carry
 * it. `tool:<name>` names a registered tool (never a name the model invented).
 */
export type UncertainCause =
  | "admission_fenced"
  /** An operator fenced the turn's scope after it was admitted: its next claim, append or final result was refused. */
  | "scope_fenced"
  | "audit"
  | "cancelled"
  | "child"
  | "children_pending"
  | "commit"
  /** The turn's continuation could not be written at a step boundary (issue 25). */
  | "continuation"
  | "deadline"
  | "long_context"
  | "media"
  | "volatile"
  | RunnerCause
  | `call:${CallKind}:${CallCause}`
  | `hook:${HookName}`
  | `tool:${string}`;

const SIMPLE: ReadonlySet<string> = new Set([
  "admission_fenced",
  "scope_fenced",
  "audit",
  "cancelled",
  "child",
  "children_pending",
  "commit",
  "continuation",
  "deadline",
  "long_context",
  "media",
  "volatile",
  "input",
  "session_load",
  "session_append",
  "result_store",
  "root_store",
  "admission_store",
  "admit",
  "root_reserve",
  "expired",
  "loop",
]);

const CALL = /^call:(main|direct|delegate|summary|extraction|single):[a-z0-9_]+(:[a-z0-9_]+)*$/;
const HOOK = /^hook:(turn:start|turn:end|step:pre|step:post|tool:pre|tool:post)$/;
const TOOL = /^tool:[A-Za-z0-9_-]{1,128}$/;

/** Whether a string is in the uncertain-cause vocabulary (its shape; the call tails are typed above). */
export function isUncertainCause(value: unknown): value is UncertainCause {
  return (
    typeof value === "string" &&
    (SIMPLE.has(value) || CALL.test(value) || HOOK.test(value) || TOOL.test(value))
  );
}

const KNOWN_STOPS: ReadonlySet<string> = new Set([
  "end_turn",
  "tool_use",
  "max_tokens",
  "stop_sequence",
  "pause_turn",
  "refusal",
  "context_window_exceeded",
]);

/** A stop reason as a cause names it: a known one verbatim, anything a provider invented as `unknown`. */
export function stopTag(stop: string): KnownStopReason | "none" | "unknown" {
  if (stop === "none") return "none";
  return KNOWN_STOPS.has(stop) ? (stop as KnownStopReason) : "unknown";
}
