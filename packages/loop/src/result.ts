import type {
  Block,
  CallKind,
  CostReceipt,
  JsonObject,
  Msg,
  RefusalCategory,
  StopReason,
  TurnFailure,
  UncertainCause,
  Usage,
} from "@alma-harness/core";
import type { Continuation, PendingAsk } from "./continuation.js";

/** What a turn ended in: the engine's one outcome vocabulary (the host's view is built from it). */

export interface TurnToolCall {
  readonly id: string;
  readonly name: string;
  readonly input: JsonObject;
  readonly isError: boolean;
}

/** Every way a completed turn ended, the one list readers check against. */
export const TERMINAL_REASONS = Object.freeze([
  "answered",
  "terminal_tool",
  "call_limit",
  "step_limit",
  "time_limit",
  "budget",
  "max_tokens",
  "refused",
  /**
   * An attested context refusal with no rotation left (seed 002, "terminalReason is completed"):
   * the view is completed with an empty reply, and `stopReason: "context_window_exceeded"` says why;
   * hosts read `stopReason`.
   */
  "completed",
  /** The same ending as stored before issue 29 spelled it as seed 002 does: read, never written. */
  "context_window",
  "unanswered",
  "error",
] as const);
export type TerminalReason = (typeof TERMINAL_REASONS)[number];

export type BudgetMetric =
  | "perTurnUsd"
  | "perSessionUsd"
  | "perTenantDayUsd"
  | "maxToolCalls"
  | "maxModelTokens"
  | "unpriced";

export interface TurnResult {
  readonly turnId: string;
  /** What the person sees: the final step's blocks without reasoning; empty when unanswered. */
  readonly reply: readonly Block[];
  readonly toolCalls: readonly TurnToolCall[];
  readonly usage: Usage;
  readonly costMicros: number;
  readonly receipts: readonly CostReceipt[];
  readonly stopReason: StopReason | null;
  readonly terminalReason: TerminalReason;
  readonly callLimit?: { readonly maxCalls: number; readonly answered: boolean };
  readonly stepLimit?: { readonly maxSteps: number; readonly answered: boolean };
  readonly timeLimit?: { readonly answered: boolean };
  readonly budget?: { readonly metric: BudgetMetric; readonly answered: boolean };
  /** With terminal reason `refused`: the provider's category, closed (the refused output is neither shown nor kept). */
  readonly refusal?: { readonly category: RefusalCategory };
  readonly warnings: readonly string[];
  readonly failure?: TurnFailure;
  /** With terminal reason `unanswered`: the main call ran out of attempts; the cause of its last failure. */
  readonly unanswered?: { readonly cause: UncertainCause };
  /** Every failed call of the turn, by cause, in order (spec: call-retry); absent when none failed. */
  readonly failures?: readonly TurnCallFailure[];
  /** Calls claimed without a settled cost when the turn completed (absent when none). They count toward no cap. */
  readonly unsettledCalls?: number;
}

/** One failed call attempt on the result: its kind and its cause (a recall that is skipped will add its own kind). */
export interface TurnCallFailure {
  readonly kind: CallKind;
  readonly cause: UncertainCause;
}

export type TurnOutcome =
  | { readonly status: "completed"; readonly result: TurnResult; readonly messages: readonly Msg[] }
  | {
      readonly status: "reconciliation_required";
      readonly cause: UncertainCause;
      readonly failure: TurnFailure;
      readonly messages: readonly Msg[];
      readonly receipts: readonly CostReceipt[];
    }
  | {
      /** Parked on a permission ask (`asks: "park"`): the turn resumes from `continuation`. */
      readonly status: "awaiting_approval";
      readonly continuation: Continuation;
      readonly asks: readonly PendingAsk[];
      readonly messages: readonly Msg[];
    }
  | { readonly status: "not_admitted"; readonly reason: string };

/**
 * The reply as one string, for a chat line or a log the host owns: the text blocks the model wrote
 * (none a harness notice), joined by newlines; empty when the turn was unanswered. `reply` stays
 * the blocks (tool and provider blocks, media), which a renderer that shows more reads instead.
 */
export function replyText(result: Pick<TurnResult, "reply">): string {
  return result.reply
    .map((b) => (b.type === "text" && b.origin === undefined ? b.text : undefined))
    .filter((text): text is string => text !== undefined)
    .join("\n");
}
