import type { ConversationView } from "@alma-harness/conversation";
import { type Block, microsToUsd } from "@alma-harness/core";
import type { TurnResult } from "@alma-harness/loop";
import { SEND_TOOL } from "../agent/tools.js";
import { type ErrorCode, HttpError } from "./errors.js";

/** What a client sees of a turn: text only, the host's own notice when there is no usable answer. */
export interface TurnBody {
  readonly status: "completed" | "in_progress" | "reconciliation_required" | "awaiting_approval";
  readonly rootKey: string;
  readonly replayed?: boolean;
  /** The reply's text blocks, joined; never reasoning, tool payloads or the envelope. */
  readonly text?: string;
  /** Messages the terminal `send_message` tool delivered during the turn. */
  readonly delivered?: readonly string[];
  /** The host's message when the turn ended without an answer (limits, budget, context, failures). */
  readonly notice?: string;
  readonly toolCalls?: readonly { readonly name: string; readonly isError: boolean }[];
  readonly stopReason?: string | null;
  readonly terminalReason?: string;
  readonly costUsd?: string;
  readonly warnings?: readonly string[];
  /** A parked turn's undecided asks, content-free (no input, no decision token). */
  readonly asks?: readonly {
    readonly askId: string;
    readonly tool: string;
    readonly expiresAt: number;
  }[];
  readonly expiresAt?: number;
}

export function replyText(blocks: readonly Block[]): string {
  return blocks
    .filter((b) => b.type === "text" && b.origin === undefined)
    .map((b) => (b.type === "text" ? b.text : ""))
    .join("\n")
    .trim();
}

const NOTICES = {
  unanswered:
    "The assistant could not answer this message. A member of the clinic team will follow up.",
  limit:
    "The assistant reached its limit for this message before answering. Please ask again more simply, or call the clinic.",
  time: "The assistant ran out of time for this message. Please ask again, or call the clinic.",
  context:
    "This conversation is too long for the assistant to continue. Please start a new conversation.",
  dayBudget: "The clinic's assistant budget for today is used up. Please call the clinic.",
  turnBudget:
    "This message reached the assistant's spending limit before an answer. Please ask something simpler.",
  overloaded: "The assistant's provider is busy right now. Please try again in a minute.",
  cut: "The answer was cut off. Please ask again more specifically.",
  refused:
    "The assistant cannot help with this message. A member of the clinic team will follow up.",
  failedCall:
    "The assistant could not reach its model for this message. Please try again in a minute.",
  awaiting:
    "A member of the clinic team needs to approve this before the assistant goes on. You will get the answer here.",
  uncertain:
    "We could not confirm what happened with this message. The clinic team has been alerted; please do not send it again.",
} as const;

/**
 * The host's own message for every ending that has no answer to show, as the runner's contract
 * asks: hosts inspect the limits, the stop reason and the failure, not just `completed`.
 */
export function noticeFor(
  result: TurnResult,
  text: string,
  delivered: readonly string[],
): string | undefined {
  if (result.failure) return NOTICES.overloaded;
  // Every attempt of the answering call failed (spec: call-retry): nothing was answered.
  if (result.unanswered) return NOTICES.failedCall;
  if (result.stopReason === "context_window_exceeded") return NOTICES.context;
  if (result.budget && !result.budget.answered)
    return result.budget.metric === "perTenantDayUsd" ? NOTICES.dayBudget : NOTICES.turnBudget;
  if (result.callLimit && !result.callLimit.answered) return NOTICES.limit;
  if (result.stepLimit && !result.stepLimit.answered) return NOTICES.limit;
  if (result.timeLimit && !result.timeLimit.answered) return NOTICES.time;
  if (result.terminalReason === "max_tokens") return NOTICES.cut;
  if (result.terminalReason === "refused") return NOTICES.refused;
  if (text === "" && delivered.length === 0) return NOTICES.unanswered;
  return undefined;
}

function deliveredOf(result: TurnResult): string[] {
  return result.toolCalls
    .filter((c) => c.name === SEND_TOOL && !c.isError && typeof c.input.text === "string")
    .map((c) => c.input.text as string);
}

export function completedBody(view: Extract<ConversationView, { status: "completed" }>): TurnBody {
  const { result } = view;
  const text = replyText(result.reply);
  const delivered = deliveredOf(result);
  const notice = noticeFor(result, text, delivered);
  return {
    status: "completed",
    rootKey: view.rootKey,
    replayed: view.replayed,
    text,
    delivered,
    ...(notice ? { notice } : {}),
    toolCalls: result.toolCalls.map((c) => ({ name: c.name, isError: c.isError })),
    stopReason: result.stopReason,
    terminalReason: result.terminalReason,
    costUsd: microsToUsd(result.costMicros),
    warnings: result.warnings,
  };
}

/**
 * Maps a view to its HTTP status and body. Settled views are bodies (200; 202 while running); the
 * refusals a client must act on are errors from the one code table (409, 410, 503).
 */
export function viewResponse(view: ConversationView): { status: number; body: TurnBody } {
  switch (view.status) {
    case "completed":
      return { status: 200, body: completedBody(view) };
    case "in_progress":
      return { status: 202, body: { status: "in_progress", rootKey: view.rootKey } };
    case "awaiting_approval":
      return {
        status: 202,
        body: {
          status: "awaiting_approval",
          rootKey: view.rootKey,
          notice: NOTICES.awaiting,
          asks: view.asks.map((a) => ({ askId: a.askId, tool: a.tool, expiresAt: a.expiresAt })),
          expiresAt: view.expiresAt,
        },
      };
    case "reconciliation_required":
      return {
        status: 200,
        body: {
          status: "reconciliation_required",
          rootKey: view.rootKey,
          notice: NOTICES.uncertain,
        },
      };
    default:
      throw viewError(view);
  }
}

/** Why a request was not admitted, as the host says it (every reason but the route's own). */
const NOT_ADMITTED: Record<"cancelled" | "deadline", [ErrorCode, string]> = {
  cancelled: ["not_admitted", "the request was cancelled before it was admitted; nothing ran"],
  deadline: [
    "not_admitted",
    "the request's deadline had passed before it was admitted; nothing ran",
  ],
};

export function viewError(
  view: Exclude<
    ConversationView,
    { status: "completed" | "in_progress" | "reconciliation_required" | "awaiting_approval" }
  >,
): HttpError {
  const table: Record<typeof view.status, [ErrorCode, string]> = {
    busy: [
      "busy",
      "another message of this session is still being answered; retry later with the same key",
    ],
    unavailable: ["unavailable", "this turn's output was erased or has expired"],
    not_admitted: ["not_admitted", "no model route is available for this request; nothing ran"],
  };
  const [code, message]: [ErrorCode, string] =
    view.status !== "not_admitted" || view.reason === "routing_unavailable"
      ? table[view.status]
      : NOT_ADMITTED[view.reason];
  return new HttpError(code, message, { retryable: view.status === "busy" });
}
