import { ValidationError } from "../errors.js";
import { validateId } from "../scope.js";
import { snapshot } from "../snapshot.js";
import type { Admission } from "./admissions.js";
import type { PolicyReason } from "./audit.js";
import { FenceError, type ScopeFencedError } from "./errors.js";
import type {
  CheckpointInput,
  ClaimResumeInput,
  ClaimResumeResult,
  DecideInput,
  DecideResult,
  ParkedAsk,
  ParkedTurn,
  ParkedTurnState,
  ParkedTurnSummary,
  ParkInput,
  RecordedDecision,
  TurnOutput,
} from "./parked.js";
export { mergedOutputs } from "./parked-outputs.js";
import { CONTINUATION_LIMITS } from "./parked.js";
import { closedObject, pageLimit, scopeKey, validateName, validateTime } from "./rules.js";
import { fenceRefusal } from "./transitions.js";
import { normalizeOutputs, validateDigest } from "./parked-outputs.js";

/** What every parked-turn store applies: the same input accepted and refused, the same outcomes. */

export const MAX_PARKED_ASKS = 64;
export const PARKED_PAGE = { def: 100, max: 500 } as const;
const ASK_ID = /^ask_[0-9a-f]{32}$/;

/** The reasons a denial no person gave may carry (the kernel's). */
export const KERNEL_REASONS: ReadonlySet<string> = new Set<PolicyReason>([
  "ask_expired",
  "no_resolver",
  "resolver_failed",
  "resolver_timeout",
  "shutdown",
  "cancelled",
]);

/**
 * Whether a decision is attributed honestly (seed 004: synthetic denials remain attributed to the
 * kernel): an allow carries no reason; a person's denial is the operator's (`operator_denied` or
 * none); any other denial is the kernel's, with its closed reason.
 */
export function attributedDecision(d: {
  readonly allowed?: unknown;
  readonly by?: unknown;
  readonly reason?: unknown;
}): boolean {
  if (typeof d.allowed !== "boolean" || (d.by !== "operator" && d.by !== "kernel")) return false;
  if (d.allowed) return d.reason === undefined;
  if (d.by === "operator") return d.reason === undefined || d.reason === "operator_denied";
  return typeof d.reason === "string" && KERNEL_REASONS.has(d.reason);
}

export function validateAskId(value: unknown, field = "askId"): string {
  if (typeof value !== "string" || !ASK_ID.test(value))
    throw new ValidationError(field, "ask_id", "an ask id is ask_ and 32 hex digits");
  return value;
}

function normalizeAsk(raw: unknown, path: string): Omit<ParkedAsk, "decision"> {
  const a = closedObject(path, raw, ["askId", "callId", "tool", "action", "digest"]);
  return Object.freeze({
    askId: validateAskId(a.askId, `${path}.askId`),
    callId: validateId(`${path}.callId`, a.callId),
    tool: validateName(`${path}.tool`, a.tool),
    action: validateName(`${path}.action`, a.action),
    digest: validateDigest(a.digest, `${path}.digest`),
  });
}

export function normalizePark(input: unknown): ParkInput & { readonly key: string } {
  const p = closedObject("park", input, [
    "scope",
    "sessionId",
    "rootKey",
    "admissionId",
    "continuation",
    "outputs",
    "asks",
    "now",
    "expiresAt",
  ]);
  if (!Array.isArray(p.asks) || p.asks.length === 0 || p.asks.length > MAX_PARKED_ASKS)
    throw new ValidationError("asks", "asks", `a park holds 1 to ${MAX_PARKED_ASKS} asks`);
  const asks = p.asks.map((a, i) => normalizeAsk(a, `asks[${i}]`));
  if (new Set(asks.map((a) => a.askId)).size !== asks.length)
    throw new ValidationError("asks", "distinct", "a park's ask ids are distinct");
  const now = validateTime("now", p.now);
  const expiresAt = validateTime("expiresAt", p.expiresAt);
  if (expiresAt <= now)
    throw new ValidationError("expiresAt", "after_now", "expiresAt must be after now");
  return Object.freeze({ ...runWrite("park", p), asks: Object.freeze(asks), now, expiresAt });
}

export function normalizeCheckpoint(input: unknown): CheckpointInput & { readonly key: string } {
  const c = closedObject("checkpoint", input, [
    "scope",
    "sessionId",
    "rootKey",
    "admissionId",
    "continuation",
    "outputs",
    "now",
  ]);
  return Object.freeze({ ...runWrite("checkpoint", c), now: validateTime("now", c.now) });
}

/** What a park and a checkpoint both carry: the run's turn, its record and its new outputs. */
function runWrite(kind: "park" | "checkpoint", r: Record<string, unknown>) {
  const { scope, key } = scopeKey(r.scope);
  if (r.continuation === undefined)
    throw new ValidationError("continuation", "required", `a ${kind} stores its continuation`);
  return {
    scope,
    key,
    sessionId: validateId("sessionId", r.sessionId),
    rootKey: validateId("rootKey", r.rootKey),
    admissionId: validateId("admissionId", r.admissionId),
    continuation: snapshot(r.continuation, CONTINUATION_LIMITS),
    outputs: normalizeOutputs(r.outputs),
  };
}

export function normalizeDecide(input: unknown): DecideInput & { readonly key: string } {
  const d = closedObject("decide", input, ["scope", "askId", "digest", "decision", "now"]);
  const { scope, key } = scopeKey(d.scope);
  const raw = closedObject("decision", d.decision, ["allowed", "by", "reason", "decidedBy"]);
  if (!attributedDecision(raw))
    throw new ValidationError(
      "decision",
      "attributed",
      "a decision is { allowed, by: operator | kernel, reason? } with a reason that fits who decided",
    );
  const decision = {
    allowed: raw.allowed as boolean,
    by: raw.by as "operator" | "kernel",
    ...(raw.reason !== undefined ? { reason: raw.reason as PolicyReason } : {}),
    ...(raw.decidedBy !== undefined
      ? { decidedBy: validateName("decision.decidedBy", raw.decidedBy) }
      : {}),
  };
  return Object.freeze({
    scope,
    key,
    askId: validateAskId(d.askId),
    digest: validateDigest(d.digest, "digest"),
    decision: Object.freeze(decision),
    now: validateTime("now", d.now),
  });
}

export function normalizeClaimResume(input: unknown): ClaimResumeInput & { readonly key: string } {
  const c = closedObject("claim", input, ["scope", "rootKey", "admissionId", "now", "deadlineAt"]);
  const { scope, key } = scopeKey(c.scope);
  const now = validateTime("now", c.now);
  const deadlineAt = validateTime("deadlineAt", c.deadlineAt);
  if (deadlineAt <= now)
    throw new ValidationError("deadlineAt", "after_now", "deadlineAt must be after now");
  return Object.freeze({
    scope,
    key,
    rootKey: validateId("rootKey", c.rootKey),
    admissionId: validateId("admissionId", c.admissionId),
    now,
    deadlineAt,
  });
}

export function normalizeDue(input: unknown): {
  readonly now: number;
  readonly only: string | null;
  readonly limit: number;
} {
  const d = closedObject("due", input, ["now", "scope", "limit"]);
  return {
    now: validateTime("now", d.now),
    only: d.scope === undefined ? null : scopeKey(d.scope).key,
    limit: pageLimit(d.limit, PARKED_PAGE.def, PARKED_PAGE.max),
  };
}

export function normalizeParkedList(input: unknown): {
  readonly org: string;
  readonly uid: string | null;
  readonly limit: number;
} {
  const l = closedObject("list", input, ["org", "uid", "limit"]);
  const org = validateId("org", l.org);
  return {
    org,
    uid: l.uid === undefined ? null : scopeKey({ org, uid: l.uid }).scope.uid,
    limit: pageLimit(l.limit, PARKED_PAGE.def, PARKED_PAGE.max),
  };
}

/**
 * What a decision does to a parked turn, the one rule every store applies inside its transaction:
 * the outcome, and the asks to write back when it is `recorded`.
 */
export function decideOn(
  turn: ParkedTurnSummary | undefined,
  d: DecideInput,
): { readonly result: DecideResult; readonly asks?: readonly ParkedAsk[] } {
  const ask = turn?.asks.find((a) => a.askId === d.askId);
  if (!turn || !ask) return { result: Object.freeze({ status: "unknown" }) };
  if (ask.decision) {
    const same = ask.decision.allowed === d.decision.allowed && ask.decision.by === d.decision.by;
    return {
      result: Object.freeze(
        same ? { status: "same", turn } : { status: "conflict", decision: ask.decision },
      ),
    };
  }
  if (ask.digest !== d.digest) return { result: Object.freeze({ status: "digest_mismatch" }) };
  if (turn.state !== "parked" || d.now >= turn.expiresAt)
    return { result: Object.freeze({ status: "expired" }) };
  const decision: RecordedDecision = Object.freeze({ ...d.decision, decidedAt: d.now });
  const asks = Object.freeze(
    turn.asks.map((a) => (a.askId === d.askId ? Object.freeze({ ...a, decision }) : a)),
  );
  return {
    result: Object.freeze({ status: "recorded", turn: Object.freeze({ ...turn, asks }) }),
    asks,
  };
}

/**
 * Why a park is refused, read in its transaction: its admission must hold the session for this root
 * (`active`, the same session and root, before its deadline: `FenceError`), then the scope must not
 * be fenced (`ScopeFencedError`): the fenced writes' one rule, `fenceRefusal`, plus the root.
 */
export function parkRefusal(
  admission: Admission | undefined,
  p: Pick<ParkInput, "sessionId" | "rootKey" | "now">,
  scopeFenced: boolean,
): FenceError | ScopeFencedError | undefined {
  if (admission !== undefined && admission.rootKey !== p.rootKey)
    return new FenceError("the turn's admission no longer holds the session");
  return fenceRefusal(admission, p.sessionId, p.now, scopeFenced);
}

/** A claim that took nothing: the turn as it is, when there is one. */
export function notClaimable(turn: ParkedTurnSummary | undefined): ClaimResumeResult {
  return Object.freeze({ status: "not_claimable", ...(turn ? { turn: summaryOf(turn) } : {}) });
}

/** What a claim that won answers: the turn `resuming` under the fresh admission, its runs counted. */
export function claimedTurn(
  turn: ParkedTurn,
  from: ParkedTurnState,
  admission: Admission,
): Extract<ClaimResumeResult, { readonly status: "claimed" }> {
  const claimed = parkedTurnOf({
    ...turn,
    state: "resuming",
    admissionId: admission.admissionId,
    runs: turn.runs + 1,
  });
  return Object.freeze({ status: "claimed", turn: claimed, from, admission });
}

/** What a claim may take a turn from, given its holding admission as it is now (or none). */
export function claimableFrom(
  turn: ParkedTurnSummary | undefined,
  holder: Admission | undefined,
  now: number,
): ParkedTurnState | undefined {
  if (!turn || holder?.state !== "active" || holder.admissionId !== turn.admissionId)
    return undefined;
  if (turn.state === "parked") return "parked";
  return holder.deadlineAt <= now ? "resuming" : undefined;
}

/**
 * Whether a maintenance tick must go on with the turn at `now`: a park whose asks are all decided
 * (the process that recorded the last one may have died before it resumed) or expired, or a
 * resuming turn whose run's deadline passed.
 */
export function isDue(turn: ParkedTurnSummary, holderDeadlineAt: number, now: number): boolean {
  if (turn.state === "resuming") return holderDeadlineAt <= now;
  return parkReady(turn, now);
}

/** Whether a park can go on at `now`: every ask decided, or its expiry passed (the kernel denies the rest). */
export function parkReady(turn: ParkedTurnSummary, now: number): boolean {
  return turn.expiresAt <= now || turn.asks.every((a) => a.decision !== undefined);
}

/** A parked turn's summary (its continuation and outputs left out), frozen. */
export function summaryOf(turn: ParkedTurn | ParkedTurnSummary): ParkedTurnSummary {
  const { continuation: _c, outputs: _o, ...rest } = turn as ParkedTurn;
  return Object.freeze(rest);
}

/** The record as stores return it: asks and their decisions frozen. */
export function parkedTurnOf(fields: ParkedTurn): ParkedTurn {
  return Object.freeze({
    ...fields,
    outputs: Object.isFrozen(fields.outputs) ? fields.outputs : Object.freeze([...fields.outputs]),
    scope: Object.freeze({ ...fields.scope }),
    asks: Object.freeze(
      fields.asks.map((a) =>
        Object.freeze({ ...a, ...(a.decision ? { decision: Object.freeze(a.decision) } : {}) }),
      ),
    ),
  });
}

/** The record a park writes: `parked` under the run's admission, its asks undecided, every output it holds. */
export function parkedRecord(
  p: ParkInput,
  runs: number,
  outputs: readonly TurnOutput[],
): ParkedTurn {
  return parkedTurnOf({
    scope: p.scope,
    sessionId: p.sessionId,
    rootKey: p.rootKey,
    admissionId: p.admissionId,
    state: "parked",
    asks: p.asks,
    parkedAt: p.now,
    expiresAt: p.expiresAt,
    runs,
    continuation: p.continuation,
    outputs,
  });
}

/**
 * The record a checkpoint writes: `resuming` under the run's admission, no asks, its deadline, every
 * output it holds (a store that answers only the summary may pass the write's own).
 */
export function checkpointRecord(
  c: CheckpointInput,
  deadlineAt: number,
  runs: number,
  outputs: readonly TurnOutput[],
): ParkedTurn {
  return parkedTurnOf({
    scope: c.scope,
    sessionId: c.sessionId,
    rootKey: c.rootKey,
    admissionId: c.admissionId,
    state: "resuming",
    asks: [],
    parkedAt: c.now,
    expiresAt: deadlineAt,
    runs,
    continuation: c.continuation,
    outputs,
  });
}
