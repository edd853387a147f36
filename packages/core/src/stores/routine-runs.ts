import { BUDGET_CAP_NAMES, type BudgetCapName } from "../caps.js";
import { ValidationError } from "../errors.js";
import { type Scope, validateId } from "../scope.js";
import { snapshot } from "../snapshot.js";
import { ConflictError } from "./errors.js";
import {
  closedObject,
  decodeCursor,
  encodeCursor,
  pageLimit,
  scopeKey,
  validateCount,
  validateOneOf,
  validateTime,
} from "./rules.js";

/**
 * The state of one slot of a routine, a closed vocabulary a host reads:
 * - `running`: claimed; its work is under way (or its process died: see `reconcileInterrupted`);
 * - `submitted`: its work was handed to a provider batch job, to be collected by a later claim;
 * - `completed`: its result was delivered to the routine's destination;
 * - `failed`: it ended without a result, certainly (`reason` says why); nothing runs it again by itself;
 * - `missed`: the host was down at the slot and the routine does not `catchUp`; it never ran;
 * - `reconciliation_required`: whether its work or its delivery happened is not known (its claim
 *   was interrupted, its turn was uncertain); never run again automatically: an operator resolves it.
 */
export type RoutineRunState =
  | "running"
  | "submitted"
  | "completed"
  | "failed"
  | "missed"
  | "reconciliation_required";
export const ROUTINE_RUN_STATES: readonly RoutineRunState[] = Object.freeze([
  "running",
  "submitted",
  "completed",
  "failed",
  "missed",
  "reconciliation_required",
]);

/** Why a run is `failed`, `missed`, `reconciliation_required` or resolved by an operator: a closed vocabulary. */
export type RoutineRunReason =
  | "missed"
  | "not_admitted"
  | "unavailable"
  | "invalid_request"
  | "no_reply"
  | "delivery_failed"
  | "job_failed"
  | "job_uncertain"
  | "budget_stopped"
  | "turn_uncertain"
  | "interrupted"
  | "operator_abandoned"
  | "operator_completed";
export const ROUTINE_RUN_REASONS: readonly RoutineRunReason[] = Object.freeze([
  "missed",
  "not_admitted",
  "unavailable",
  "invalid_request",
  "no_reply",
  "delivery_failed",
  "job_failed",
  "job_uncertain",
  "budget_stopped",
  "turn_uncertain",
  "interrupted",
  "operator_abandoned",
  "operator_completed",
]);

const CAP_NAMES = BUDGET_CAP_NAMES;

/** Where a run's result went. `capsCrossed` repeats the run's (what the destination was told). */
export interface RoutineDelivery {
  readonly destination: string;
  readonly status: "delivered";
  readonly at: number;
  readonly capsCrossed?: readonly BudgetCapName[];
}

/** The provider batch job a `submitted` run waits on: its id, as the `RoutineJobs` seam answered it. */
export interface RoutineSubmission {
  readonly jobId: string;
  readonly submittedAt: number;
}

/**
 * One slot of one routine, content-free: ids, a state, a closed reason, times, money and caps.
 * Its identity is `(scope, routineId, slot)`; `attempt` counts operator reruns (from 1).
 * Arrays are never empty: an empty `capsCrossed` is normalized to absent.
 */
export interface RoutineRun {
  readonly scope: Scope;
  readonly routineId: string;
  /** The slot's time, epoch ms (the cron's fire time). */
  readonly slot: number;
  readonly attempt: number;
  readonly state: RoutineRunState;
  /** The session its turn runs in (`routineSessionId`); erasure replaces it by the session's mark. */
  readonly sessionId: string;
  /** The claimer (a host process's id) while `running` or `submitted`, and after. */
  readonly owner?: string;
  readonly claimedAt?: number;
  readonly updatedAt: number;
  readonly reason?: RoutineRunReason;
  /** Run after its slot's grace, because the routine says `catchUp`. */
  readonly late?: true;
  readonly turnId?: string;
  readonly costMicros?: number;
  readonly capsCrossed?: readonly BudgetCapName[];
  readonly delivery?: RoutineDelivery;
  readonly submission?: RoutineSubmission;
}

/** A claim: run (or collect) this slot now as `owner`. */
export interface RoutineClaim {
  readonly scope: Scope;
  readonly routineId: string;
  readonly slot: number;
  readonly sessionId: string;
  readonly owner: string;
  readonly at: number;
  readonly late?: boolean;
}

/** `claimed`: this caller runs it (`collecting`: a `submitted` run taken for collection); `exists`: someone else has (or had) it. */
export type RoutineClaimResult =
  | { readonly status: "claimed"; readonly run: RoutineRun; readonly collecting: boolean }
  | { readonly status: "exists"; readonly run: RoutineRun };

/** How the claimer ends its `running` run. */
export interface RoutineFinish {
  readonly scope: Scope;
  readonly routineId: string;
  readonly slot: number;
  readonly owner: string;
  readonly attempt: number;
  readonly at: number;
  readonly state: "completed" | "failed" | "submitted" | "reconciliation_required";
  readonly reason?: RoutineRunReason;
  readonly turnId?: string;
  readonly costMicros?: number;
  readonly capsCrossed?: readonly BudgetCapName[];
  readonly delivery?: RoutineDelivery;
  readonly submission?: RoutineSubmission;
}

/** An operator's resolution of a `reconciliation_required` (or `failed`) run. */
export type RoutineResolveAction = "abandon" | "confirm_completed" | "rerun";
export const ROUTINE_RESOLVE_ACTIONS: readonly RoutineResolveAction[] = Object.freeze([
  "abandon",
  "confirm_completed",
  "rerun",
]);

export interface RoutineResolve {
  readonly scope: Scope;
  readonly routineId: string;
  readonly slot: number;
  readonly action: RoutineResolveAction;
  readonly at: number;
  /** With `rerun`: the new claimer. */
  readonly owner?: string;
}

export interface RoutineRunQuery {
  readonly routineId?: string;
  readonly state?: RoutineRunState;
  readonly cursor?: string;
  /** 1–100, default 50. */
  readonly limit?: number;
}

export interface RoutineRunPage {
  readonly items: readonly RoutineRun[];
  readonly nextCursor?: string;
}

/**
 * Where runs are recorded (seed 001, "RoutineRunStore"). Guarantees:
 * - `claim` is mandatory and atomic: it inserts `running` only if the slot has no run, or
 *   transitions `submitted` to `running` for collection; any other existing run answers `exists`.
 *   Any number of concurrent claimers of one slot, in any number of processes, get one `claimed`.
 *   It is a durability point: the claim is committed before it answers.
 * - `recordMissed` inserts `missed` only if the slot has no run (a racing claim wins or loses whole).
 * - `finish` moves the caller's own `running` run (same owner and attempt) to its end; the same
 *   finish again (a lost acknowledgement) replays the stored run; anything else throws
 *   `RoutineRunConflictError`. Empty arrays are stored absent.
 * - `reconcileInterrupted` moves every `running` run claimed before `claimedBefore` (a process
 *   that died holding it) to `reconciliation_required` (`interrupted`), across scopes, and answers
 *   them. Nothing ever moves a run back to `running` but a claim of a `submitted` run or an
 *   operator's `resolve(rerun)`.
 * - `resolve` is the operator's (once: a run it closed stays closed): `abandon` (failed, `operator_abandoned`), `confirm_completed`
 *   (completed, `operator_completed`) or `rerun` (running again, attempt + 1) of a
 *   `reconciliation_required` or `failed` run; otherwise `RoutineRunConflictError`.
 * - Reads are scoped; `list` is newest slot first with an opaque cursor.
 * - Erasure replaces a run's session id by the session's mark; `eraseScope` removes the scope's runs.
 */
export interface RoutineRunStore {
  claim(claim: RoutineClaim): Promise<RoutineClaimResult>;
  recordMissed(missed: {
    readonly scope: Scope;
    readonly routineId: string;
    readonly slot: number;
    readonly sessionId: string;
    readonly at: number;
  }): Promise<RoutineClaimResult>;
  finish(finish: RoutineFinish): Promise<RoutineRun>;
  reconcileInterrupted(input: {
    readonly claimedBefore: number;
    readonly at: number;
  }): Promise<readonly RoutineRun[]>;
  resolve(resolve: RoutineResolve): Promise<RoutineRun>;
  get(scope: Scope, routineId: string, slot: number): Promise<RoutineRun | undefined>;
  latest(scope: Scope, routineId: string): Promise<RoutineRun | undefined>;
  list(scope: Scope, query?: RoutineRunQuery): Promise<RoutineRunPage>;
}

/** A run transition the store cannot make: not the caller's, not in the state it needs, or a different end already recorded. */
export class RoutineRunConflictError extends ConflictError {
  constructor(message: string) {
    super("store_conflict", message);
  }
}

const LIMITS = Object.freeze({
  maxDepth: 4,
  maxNodes: 64,
  maxStringBytes: 512,
  maxTotalBytes: 8 * 1024,
});

/** The session a run's turn runs in: one per slot and routine, so runs never share a transcript. */
export function routineSessionId(routineId: string, slot: number): string {
  return `routine:${routineId}:${new Date(slot).toISOString()}`;
}

function caps(field: string, value: unknown): readonly BudgetCapName[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw new ValidationError(field, "array", `${field} must be an array`);
  const out = value.map((c: unknown, i: number) => validateOneOf(`${field}[${i}]`, c, CAP_NAMES));
  if (new Set(out).size !== out.length)
    throw new ValidationError(field, "unique", `${field} must be distinct`);
  return out.length === 0 ? undefined : Object.freeze(out);
}

function delivery(value: unknown): RoutineDelivery | undefined {
  if (value === undefined) return undefined;
  const d = closedObject("delivery", value, ["destination", "status", "at", "capsCrossed"]);
  const capsCrossed = caps("delivery.capsCrossed", d.capsCrossed);
  return Object.freeze({
    destination: validateId("delivery.destination", d.destination),
    status: validateOneOf("delivery.status", d.status, ["delivered"] as const),
    at: validateTime("delivery.at", d.at),
    ...(capsCrossed ? { capsCrossed } : {}),
  });
}

function submission(value: unknown): RoutineSubmission | undefined {
  if (value === undefined) return undefined;
  const s = closedObject("submission", value, ["jobId", "submittedAt"]);
  return Object.freeze({
    jobId: validateId("submission.jobId", s.jobId),
    submittedAt: validateTime("submission.submittedAt", s.submittedAt),
  });
}

const RUN_FIELDS = [
  "scope",
  "routineId",
  "slot",
  "attempt",
  "state",
  "sessionId",
  "owner",
  "claimedAt",
  "updatedAt",
  "reason",
  "late",
  "turnId",
  "costMicros",
  "capsCrossed",
  "delivery",
  "submission",
];

/** A run validated and frozen (what every store writes and reads back); empty arrays become absent. */
export function normalizeRoutineRun(input: unknown): {
  readonly run: RoutineRun;
  readonly key: string;
} {
  const r = closedObject("run", snapshot(input, LIMITS), RUN_FIELDS);
  const { scope, key } = scopeKey(r.scope);
  const opt = <T>(name: string, value: unknown, f: (v: unknown) => T) =>
    value === undefined ? {} : { [name]: f(value) };
  const capsCrossed = caps("run.capsCrossed", r.capsCrossed);
  const d = delivery(r.delivery);
  const s = submission(r.submission);
  if (r.late !== undefined && r.late !== true)
    throw new ValidationError("run.late", "true", "late is true or absent");
  const run: RoutineRun = Object.freeze({
    scope,
    routineId: validateId("run.routineId", r.routineId),
    slot: validateTime("run.slot", r.slot),
    attempt: validateCount("run.attempt", r.attempt, 1),
    state: validateOneOf("run.state", r.state, ROUTINE_RUN_STATES),
    sessionId: validateId("run.sessionId", r.sessionId),
    ...opt("owner", r.owner, (v) => validateId("run.owner", v)),
    ...opt("claimedAt", r.claimedAt, (v) => validateTime("run.claimedAt", v)),
    updatedAt: validateTime("run.updatedAt", r.updatedAt),
    ...opt("reason", r.reason, (v) => validateOneOf("run.reason", v, ROUTINE_RUN_REASONS)),
    ...(r.late === true ? { late: true as const } : {}),
    ...opt("turnId", r.turnId, (v) => validateId("run.turnId", v)),
    ...opt("costMicros", r.costMicros, (v) => validateCount("run.costMicros", v)),
    ...(capsCrossed ? { capsCrossed } : {}),
    ...(d ? { delivery: d } : {}),
    ...(s ? { submission: s } : {}),
  });
  return Object.freeze({ run, key });
}

export const ROUTINE_RUN_PAGE = Object.freeze({ def: 50, max: 100 });

/** A listing's validated query: newest slot first, so the cursor is `[-slot, routineId]`. */
export function normalizeRoutineRunQuery(
  scope: unknown,
  query: unknown = {},
): {
  readonly scope: Scope;
  readonly key: string;
  readonly routineId?: string;
  readonly state?: RoutineRunState;
  readonly limit: number;
  readonly after?: readonly [number, string];
} {
  const { scope: s, key } = scopeKey(scope);
  const q = closedObject("query", query, ["routineId", "state", "cursor", "limit"]);
  const limit = pageLimit(q.limit, ROUTINE_RUN_PAGE.def, ROUTINE_RUN_PAGE.max);
  const after = decodeCursor(q.cursor, ["number", "string"]) as
    | readonly [number, string]
    | undefined;
  return {
    scope: s,
    key,
    limit,
    ...(q.routineId !== undefined ? { routineId: validateId("routineId", q.routineId) } : {}),
    ...(q.state !== undefined
      ? { state: validateOneOf("state", q.state, ROUTINE_RUN_STATES) }
      : {}),
    ...(after !== undefined ? { after } : {}),
  };
}

/** The sort key of a run in a listing: newest slot first, then by routine. */
export function routineRunKey(r: RoutineRun): readonly [number, string] {
  return [-r.slot, r.routineId];
}

export function routineRunCursor(r: RoutineRun): string {
  return encodeCursor(routineRunKey(r));
}

/** The stored JSON of a run (everything but the scope), version 1. */
export function routineRunText(r: RoutineRun): string {
  const { scope: _s, ...rest } = r;
  return JSON.stringify({ v: 1, ...rest });
}

export function routineRunFromText(scope: Scope, text: string): RoutineRun {
  const parsed = JSON.parse(text) as { v?: unknown } & Omit<RoutineRun, "scope">;
  if (parsed.v !== 1)
    throw new ValidationError(
      "record",
      "record_version",
      "a routine run row has an unknown version",
    );
  const { v: _v, ...rest } = parsed;
  return normalizeRoutineRun({ scope, ...rest }).run;
}
