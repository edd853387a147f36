import type { TurnResult } from "@alma-harness/loop";

/** What the host sees for a turn. */
export type ConversationView =
  | {
      readonly status: "completed";
      readonly rootKey: string;
      readonly replayed: boolean;
      readonly result: TurnResult;
    }
  | { readonly status: "busy"; readonly rootKey: string; readonly holder: string }
  | { readonly status: "in_progress"; readonly rootKey: string }
  /**
   * The turn is parked on permission asks (`asks: "park"`): no process runs it and the session
   * stays held until every ask is decided (`resolveAsk`) or `expiresAt` passes (the kernel denies
   * what is undecided); then a resume in any process goes on with it.
   */
  | {
      readonly status: "awaiting_approval";
      readonly rootKey: string;
      readonly asks: readonly AwaitingAsk[];
      readonly expiresAt: number;
    }
  | { readonly status: "reconciliation_required"; readonly rootKey: string }
  | { readonly status: "unavailable"; readonly rootKey: string }
  /**
   * Nothing ran: no route for the request (`routing_unavailable`), its signal was aborted before
   * admission (`cancelled`), or its root's proposed deadline had passed at admission (`deadline`).
   */
  | {
      readonly status: "not_admitted";
      readonly reason: "routing_unavailable" | "cancelled" | "deadline";
    };

/** The stored final envelope of a root. */
export interface FinalEnvelope {
  readonly version: number;
  readonly result: TurnResult;
}

/** One undecided ask of a parked turn, content-free: the call's input stays in the store. */
export interface AwaitingAsk {
  readonly askId: string;
  readonly callId: string;
  readonly tool: string;
  readonly action: string;
  /** SHA-256 of the canonical `[tool, callId, input]`: what a decision is bound to. */
  readonly digest: string;
  readonly expiresAt: number;
}
