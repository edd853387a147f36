import { AlmaError } from "@alma-harness/core";

/** The same key was used with different input, options or configuration revision. */
export class ConversationConflictError extends AlmaError {
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

/** A batch of recorded events the log can never accept; nothing was written. */
export class EventRefusedError extends AlmaError {
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
