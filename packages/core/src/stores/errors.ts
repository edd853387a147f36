import { AlmaError } from "../errors.js";

/** An append was refused: the admission it names is not active for that session (stale, released, uncertain). */
export class FenceError extends AlmaError {
  constructor(
    message = "the admission is not active for this session",
    code: "fenced" | "scope_fenced" = "fenced",
  ) {
    super(code, message);
  }
}

/**
 * The scope is fenced by an operator (`AdmissionStore.fenceScope`): a new key is refused before
 * admission, and a write fenced on an admission of the scope (claim, session append, final-result
 * put) or a journal dispatch of the scope is refused inside its transaction. It is a `FenceError`, so code that handles a stale
 * admission handles it too; `code` is `scope_fenced`. Not retryable: only lifting the fence helps.
 */
export class ScopeFencedError extends FenceError {
  constructor(message = "the scope is fenced by an operator") {
    super(message, "scope_fenced");
  }
}

/** A recorded event id already exists in the session's log. */
export class DuplicateEventError extends AlmaError {
  readonly eventId: string;
  constructor(eventId: string) {
    super("duplicate_event", `event "${eventId}" is already in the session's log`);
    this.eventId = eventId;
  }
}

/** A write names an identity that exists with different content. */
/** The conflict codes of `AlmaErrorCode`. */
export type ConflictCode =
  | "admission_exists"
  | "execution_conflict"
  | "result_conflict"
  | "result_not_reserved"
  | "store_conflict"
  | "settlement_conflict"
  | "session_label_conflict"
  | "usage_observation_conflict"
  | "memory_conflict"
  | "model_job_conflict"
  | "conversation_conflict"
  | "event_refused";

/**
 * A write or request the store can never accept as it is: an identity already bound to other
 * content (a conversation key reused for another request: `ConversationConflictError`), or a
 * batch its log refuses (`EventRefusedError`). Retrying it unchanged never helps, so
 * an outbox skips and alerts on it and retries every other error.
 */
export class ConflictError extends AlmaError {
  constructor(code: ConflictCode, message: string) {
    super(code, message);
  }
}

/** The seed's name for `ConflictError` (seed 002, "It is an ExecutionConflictError"): the same class. */
export { ConflictError as ExecutionConflictError };

export class SettlementConflictError extends ConflictError {
  constructor(settlementId: string) {
    super("settlement_conflict", `settlement "${settlementId}" exists with different input`);
  }
}

export class SessionLabelConflictError extends ConflictError {
  constructor() {
    super("session_label_conflict", "the session already has different labels");
  }
}

/** A usage observation's identity `(scope, operationId, source)` is already kept with different content. */
export class UsageObservationConflictError extends ConflictError {
  constructor() {
    super(
      "usage_observation_conflict",
      "a different usage observation of this call and source is already kept",
    );
  }
}

/** A memory record's id (`episodeId`, `factId`) is already used in its scope by a record with other content. */
export class MemoryConflictError extends ConflictError {
  readonly record: "episode" | "fact";
  constructor(record: "episode" | "fact") {
    super("memory_conflict", `a different ${record} is already stored under this id`);
    this.record = record;
  }
}

export class SessionLabelErasedError extends AlmaError {
  constructor() {
    super("session_label_erased", "the session's labels were erased and cannot be written again");
  }
}

/** A durable write referred to a result identity that was erased or expired; it cannot be revived. */
export class ErasedError extends AlmaError {
  constructor(what: string) {
    super("erased", `${what} was erased or expired and cannot be revived`);
  }
}

/** A store failed for a reason outside its contract (connection lost, serialization failure after retries). */
export class StoreUnavailableError extends AlmaError {
  constructor(message: string, cause?: unknown) {
    super("store_unavailable", message, { retryable: true, cause });
  }
}

/** The caller's fence was superseded (a recovery sweep or another claim won). */
export class StaleFenceError extends AlmaError {
  constructor(message = "the fence is no longer current") {
    super("stale_fence", message);
  }
}
