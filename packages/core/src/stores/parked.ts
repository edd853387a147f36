import type { PolicyReason } from "./audit.js";
import type { Scope } from "../scope.js";
import type { JsonValue, SnapshotLimits } from "../snapshot.js";
import type { Admission } from "./admissions.js";

/**
 * How large a stored continuation may be, and the outputs one write adds. A version-1 record's
 * messages are the turn's session batch, which the session store bounds at the default snapshot
 * limits (8 MiB, 100,000 nodes); the record adds the step's calls, receipts and counters, so it is
 * held at twice those, strings as long as a message's. The outputs of one write are at most that
 * batch too.
 */
export const CONTINUATION_LIMITS: SnapshotLimits = Object.freeze({
  maxDepth: 64,
  maxNodes: 200_000,
  maxStringBytes: 1024 * 1024,
  maxTotalBytes: 16 * 1024 * 1024,
});

/**
 * A decision recorded on a parked ask. `by: "operator"` is a person's (`decidedBy` names them, as
 * the host knows them); `by: "kernel"` is the runtime's (an expiry), never a person's.
 */
export interface RecordedDecision {
  readonly allowed: boolean;
  readonly by: "operator" | "kernel";
  readonly reason?: PolicyReason;
  readonly decidedBy?: string;
  readonly decidedAt: number;
}

/** One pending permission ask of a parked turn, content-free (the call's input stays in the continuation). */
export interface ParkedAsk {
  /** `ask_` and 32 hex digits, derived from the turn and the call (the same ask parks under the same id). */
  readonly askId: string;
  readonly callId: string;
  readonly tool: string;
  /** The permission request's action (the tool's declared verb), never the call's input. */
  readonly action: string;
  /** SHA-256 (64 hex) of the canonical `[tool, callId, input]`: a decision names it. */
  readonly digest: string;
  readonly decision?: RecordedDecision;
}

/**
 * `parked`: no process runs the turn; its admission (still `active`, the session held) carries the
 * asks' expiry as its deadline. `resuming`: one run claimed it under a fresh admission.
 */
export type ParkedTurnState = "parked" | "resuming";
export const PARKED_TURN_STATES: readonly ParkedTurnState[] = Object.freeze(["parked", "resuming"]);

/** A parked turn as listings show it: everything but its continuation. */
export interface ParkedTurnSummary {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  /** The admission that holds the session for the turn now (the parked run's, or the resuming run's). */
  readonly admissionId: string;
  readonly state: ParkedTurnState;
  readonly asks: readonly ParkedAsk[];
  readonly parkedAt: number;
  /** When an undecided ask is denied by the kernel (`ask_expired`); the parked admission's deadline. */
  readonly expiresAt: number;
  /** How many runs claimed the turn since it first parked (0 while it never resumed). */
  readonly runs: number;
}

/**
 * One message a turn recorded, stored once beside its record (issue 25): the continuation refers to
 * it by `digest`, the SHA-256 (64 hex) the loop computes over the message's canonical JSON. The
 * store keeps what it is given under that key (the reader checks the digest, not the store).
 */
export interface TurnOutput {
  readonly digest: string;
  readonly message: JsonValue;
}

/**
 * A parked turn with its continuation (the loop's record, as the engine returned it) and the
 * outputs every park and checkpoint of the turn stored, in digest order.
 */
export interface ParkedTurn extends ParkedTurnSummary {
  readonly continuation: JsonValue;
  readonly outputs: readonly TurnOutput[];
}

export interface ParkInput {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  /** The run's admission: it must be `active` and before its deadline (else `FenceError`). */
  readonly admissionId: string;
  readonly continuation: JsonValue;
  /** Outputs the continuation refers to that this turn has not stored yet (a digest stored keeps its first message). */
  readonly outputs?: readonly TurnOutput[];
  /** 1 to 64 asks, undecided, distinct ids. */
  readonly asks: readonly Omit<ParkedAsk, "decision">[];
  readonly now: number;
  /** After `now`; becomes the admission's deadline. */
  readonly expiresAt: number;
}

/** A running turn's continuation at a step boundary, written by the run that holds the session. */
export interface CheckpointInput {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  /** The run's admission: it must be `active`, of this root and session, before its deadline. */
  readonly admissionId: string;
  readonly continuation: JsonValue;
  /** Outputs the continuation refers to that this turn has not stored yet (as `park`'s). */
  readonly outputs?: readonly TurnOutput[];
  readonly now: number;
}

export interface DecideInput {
  readonly scope: Scope;
  readonly askId: string;
  /** The digest the decider saw: another digest is refused (`digest_mismatch`), nothing recorded. */
  readonly digest: string;
  readonly decision: {
    readonly allowed: boolean;
    readonly by: "operator" | "kernel";
    readonly reason?: PolicyReason;
    readonly decidedBy?: string;
  };
  readonly now: number;
}

/** What recording a decision came to: one vocabulary for every store. */
export type DecideResult =
  | { readonly status: "recorded"; readonly turn: ParkedTurnSummary }
  /** An equal decision (allowed and by) was already recorded: nothing changed. */
  | { readonly status: "same"; readonly turn: ParkedTurnSummary }
  /** Another decision was recorded first: it stands. */
  | { readonly status: "conflict"; readonly decision: RecordedDecision }
  | { readonly status: "digest_mismatch" }
  /** The ask's expiry passed undecided: the kernel denies it; nothing recorded. */
  | { readonly status: "expired" }
  /** No parked turn of the scope has this ask (never parked, resumed and done, or erased). */
  | { readonly status: "unknown" };

export interface ClaimResumeInput {
  readonly scope: Scope;
  readonly rootKey: string;
  /** The fresh admission the resuming run writes under (a new id; used once per scope). */
  readonly admissionId: string;
  readonly now: number;
  readonly deadlineAt: number;
}

export type ClaimResumeResult =
  | {
      readonly status: "claimed";
      /** The turn as claimed: `resuming`, under the fresh admission, `runs` counted. */
      readonly turn: ParkedTurn;
      /** What it was claimed from: a park, or a resuming run whose admission's deadline passed. */
      readonly from: ParkedTurnState;
      readonly admission: Admission;
    }
  /** Nothing to claim: no such turn, or a run holds it (before its deadline), or its admission ended. */
  | { readonly status: "not_claimable"; readonly turn?: ParkedTurnSummary };

/**
 * Turns parked on permission asks (issue 25), kept beside the admissions they hold, so a park, a
 * claim and the admission they move are one transaction. Guarantees:
 * - `park` stores the turn (replacing a `resuming` record of the same root and admission, when a
 *   resumed run parks again) with its new outputs, and moves its admission's deadline to
 *   `expiresAt`, in one transaction, only while that admission is `active`, of this root, and before its deadline
 *   (else `FenceError`) and the scope is not fenced (`ScopeFencedError`). Nothing else changes.
 * - `checkpoint` stores a running turn's continuation and its new outputs at a step boundary, in
 *   one transaction, under the same fence as `park` (else `FenceError` / `ScopeFencedError`, nothing written): the record becomes (or stays)
 *   `resuming` under that admission, with no asks, `expiresAt` the admission's deadline and `runs`
 *   kept when the record was this admission's (else 0). Not a durability point: with grouped
 *   commits it joins the transaction of the step it describes. A run that dies is then `due` once its
 *   admission's deadline passes, and `claim` takes it from there like a dead resume.
 * - `decide` is first-wins per ask: the first decision is recorded; an equal later one is `same`,
 *   a different one `conflict` (the first stands). A digest other than the ask's is refused, and
 *   so is an undecided ask at or after the turn's expiry (`expired`); nothing is recorded by a
 *   refusal. Decisions are only taken while the turn is `parked`.
 * - `claim` moves a `parked` turn (or a `resuming` one whose admission's deadline is at or before
 *   `now`: its run died) to `resuming` under a fresh `active` admission of the same session and
 *   root, and ends the old admission (`finished` from a park; `released`, reason `expired`, from a
 *   dead run), in one transaction: of concurrent claims exactly one wins. A fenced scope throws
 *   `ScopeFencedError`; an admission id that exists throws `ConflictError`.
 * - Outputs accumulate per turn: a write adds the digests the turn does not hold yet and keeps the
 *   ones it holds as they are; `get` and `claim` return them all; they go with their turn.
 * - `done` removes the turn and its outputs when its holding run ended (by that admission only);
 *   it says whether it removed one.
 * - `due` lists the turns a maintenance tick must go on with: `parked` ones at or after their
 *   expiry or with every ask decided, and `resuming` ones whose admission's deadline passed; oldest
 *   expiry first.
 * - `list` pages the summaries of an org (or one scope), oldest park first; `find` locates an ask
 *   id across scopes (an operator's route names only the ask).
 * - Erasure removes a session's (a scope's) parked turns with the rest of its rows.
 * - Scope isolation: another scope's turn or ask reads as absent.
 */
export interface ParkedTurnStore {
  park(input: ParkInput): Promise<ParkedTurn>;
  checkpoint(input: CheckpointInput): Promise<ParkedTurnSummary>;
  get(scope: Scope, rootKey: string): Promise<ParkedTurn | undefined>;
  decide(input: DecideInput): Promise<DecideResult>;
  claim(input: ClaimResumeInput): Promise<ClaimResumeResult>;
  done(scope: Scope, rootKey: string, admissionId: string): Promise<boolean>;
  due(input: {
    readonly now: number;
    readonly scope?: Scope;
    readonly limit?: number;
  }): Promise<readonly ParkedTurnSummary[]>;
  list(input: {
    readonly org: string;
    readonly uid?: string;
    readonly limit?: number;
  }): Promise<readonly ParkedTurnSummary[]>;
  find(askId: string): Promise<readonly ParkedTurnSummary[]>;
}
