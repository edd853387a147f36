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
