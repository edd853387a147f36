import { AlmaError, ConflictError } from "@alma-harness/core";

/**
 * The same key was used with different input, options or configuration revision. It is a
 * `ConflictError` (the seed's `ExecutionConflictError`): retrying it unchanged never helps.
 */
export class ConversationConflictError extends ConflictError {
  readonly rootKey: string;
  constructor(rootKey: string) {
    super(
      "conversation_conflict",
      "this idempotency key was used with a different request or configuration",
    );
    this.rootKey = rootKey;
  }
}

export type ResyncReason = "overflow" | "unavailable" | "read_failed";

/** The stream's reader was detached; resynchronize through `read(scope, rootKey)`. */
export class ConversationStreamResyncError extends AlmaError {
  readonly reason: ResyncReason;
  readonly rootKey: string;
  constructor(reason: ResyncReason, rootKey: string) {
    super(
      "stream_resync",
      `the stream reader was detached (${reason}); read the root to resynchronize`,
    );
    this.reason = reason;
    this.rootKey = rootKey;
  }
}

export type EventRefusalReason = "conflict" | "no_reply";

/**
 * A batch of recorded events the log can never accept; nothing was written. It is a
 * `ConflictError` (the seed's `ExecutionConflictError`): an outbox skips and alerts on it.
 */
export class EventRefusedError extends ConflictError {
  readonly eventId: string;
  readonly reason: EventRefusalReason;
  constructor(eventId: string, reason: EventRefusalReason) {
    super("event_refused", `event "${eventId}" refused: ${reason}`);
    this.eventId = eventId;
    this.reason = reason;
  }
}

export class ConversationConfigError extends AlmaError {
  constructor(message: string) {
    super("invalid_config", message);
  }
}

/**
 * Why a decision on a parked ask was refused; nothing was recorded and nothing ran:
 * - `unknown_ask`: no parked turn of the scope has the ask (never parked, already resumed, erased);
 * - `digest_mismatch`: the decision names another call input than the ask's;
 * - `expired`: the ask's expiry passed undecided (the kernel denies it), or a run took the turn;
 * - `already_decided`: another decision was recorded first, and stands;
 * - `token_forged`: the decision token is malformed or not signed by this deployment's key;
 * - `token_expired`: the token's expiry passed;
 * - `token_replayed`: the token's decision is already recorded (a token decides once).
 */
export type AskRefusal =
  | "unknown_ask"
  | "digest_mismatch"
  | "expired"
  | "already_decided"
  | "token_forged"
  | "token_expired"
  | "token_replayed";

export const ASK_REFUSALS: readonly AskRefusal[] = Object.freeze([
  "unknown_ask",
  "digest_mismatch",
  "expired",
  "already_decided",
  "token_forged",
  "token_expired",
  "token_replayed",
]);

/** A decision on a parked ask that was refused (`reason`); nothing was recorded or run. */
export class AskRefusedError extends AlmaError {
  readonly reason: AskRefusal;
  readonly askId: string;
  constructor(reason: AskRefusal, askId: string) {
    super("ask_refused", `the decision on ask "${askId}" was refused: ${reason}`);
    this.reason = reason;
    this.askId = askId;
  }
}
