import { ValidationError } from "../errors.js";
import { validateId } from "../scope.js";
import { snapshot } from "../snapshot.js";
import {
  normalizeRoutineRun,
  type RoutineClaim,
  type RoutineFinish,
  type RoutineResolve,
  ROUTINE_RESOLVE_ACTIONS,
  type RoutineRun,
  RoutineRunConflictError,
  routineRunText,
} from "./routine-runs.js";
import { closedObject, scopeKey, validateOneOf, validateTime } from "./rules.js";

/**
 * The transitions of a routine's run, one rule each, applied by every `RoutineRunStore` (memory,
 * SQLite and PostgreSQL decide alike): each validates its input before any I/O, and each takes the
 * slot's stored run (or none) and answers what the store writes.
 */

const LIMITS = Object.freeze({
  maxDepth: 4,
  maxNodes: 64,
  maxStringBytes: 512,
  maxTotalBytes: 8 * 1024,
});
/** A claim validated before any I/O. */
export function normalizeRoutineClaim(input: unknown): {
  readonly claim: RoutineClaim;
  readonly key: string;
} {
  const c = closedObject("claim", snapshot(input, LIMITS), [
    "scope",
    "routineId",
    "slot",
    "sessionId",
    "owner",
    "at",
    "late",
  ]);
  const { scope, key } = scopeKey(c.scope);
  if (c.late !== undefined && typeof c.late !== "boolean")
    throw new ValidationError("claim.late", "boolean", "late must be true or false");
  const claim: RoutineClaim = Object.freeze({
    scope,
    routineId: validateId("claim.routineId", c.routineId),
    slot: validateTime("claim.slot", c.slot),
    sessionId: validateId("claim.sessionId", c.sessionId),
    owner: validateId("claim.owner", c.owner),
    at: validateTime("claim.at", c.at),
    ...(c.late === true ? { late: true } : {}),
  });
  return Object.freeze({ claim, key });
}

/**
 * What a claim does to the slot's stored run: `insert` a new `running` one, `update` a `submitted`
 * one to `running` (collection), or leave the existing one (`exists`). The one rule every store applies.
 */
export function claimTransition(
  existing: RoutineRun | undefined,
  c: RoutineClaim,
): { readonly action: "insert" | "update" | "exists"; readonly run: RoutineRun } {
  if (existing === undefined) {
    const run = normalizeRoutineRun({
      scope: c.scope,
      routineId: c.routineId,
      slot: c.slot,
      attempt: 1,
      state: "running",
      sessionId: c.sessionId,
      owner: c.owner,
      claimedAt: c.at,
      updatedAt: c.at,
      ...(c.late ? { late: true } : {}),
    }).run;
    return { action: "insert", run };
  }
  if (existing.state !== "submitted") return { action: "exists", run: existing };
  const run = normalizeRoutineRun({
    ...existing,
    state: "running",
    owner: c.owner,
    claimedAt: c.at,
    updatedAt: c.at,
  }).run;
  return { action: "update", run };
}

/** The `missed` run of a slot with no run. */
export function missedRun(input: unknown): { readonly run: RoutineRun; readonly key: string } {
  const m = closedObject("missed", snapshot(input, LIMITS), [
    "scope",
    "routineId",
    "slot",
    "sessionId",
    "at",
  ]);
  return normalizeRoutineRun({
    scope: m.scope,
    routineId: m.routineId,
    slot: m.slot,
    attempt: 1,
    state: "missed",
    sessionId: m.sessionId,
    updatedAt: m.at,
    reason: "missed",
  });
}

const FINISH_FIELDS = [
  "scope",
  "routineId",
  "slot",
  "owner",
  "attempt",
  "at",
  "state",
  "reason",
  "turnId",
  "costMicros",
  "capsCrossed",
  "delivery",
  "submission",
];
const FINISH_STATES = ["completed", "failed", "submitted", "reconciliation_required"] as const;

/** A finish validated before any I/O. */
export function normalizeRoutineFinish(input: unknown): {
  readonly finish: RoutineFinish;
  readonly key: string;
} {
  const f = closedObject("finish", snapshot(input, LIMITS), FINISH_FIELDS);
  const { scope, key } = scopeKey(f.scope);
  validateOneOf("finish.state", f.state, FINISH_STATES);
  validateId("finish.owner", f.owner);
  // The metadata is checked by the run's own normalizer (a probe run), so one rule owns each field.
  const { scope: _s, owner, attempt, at, ...meta } = f;
  const probe = normalizeRoutineRun({
    scope,
    ...meta,
    attempt,
    owner,
    updatedAt: at,
    sessionId: "probe",
  }).run;
  const { sessionId: _p, updatedAt: _u, scope: _sc, ...rest } = probe;
  return Object.freeze({
    finish: Object.freeze({ scope, ...rest, at: probe.updatedAt } as RoutineFinish),
    key,
  });
}

/** The run a finish makes of the stored one: the caller's own `running` run, or its replay; else a conflict. */
export function finishTransition(
  existing: RoutineRun | undefined,
  f: RoutineFinish,
): { readonly action: "update" | "replayed"; readonly run: RoutineRun } {
  if (existing === undefined) throw new RoutineRunConflictError("the run was never claimed");
  const { scope: _s, owner: _o, attempt: _a, at, state, ...meta } = f;
  const {
    reason: _r,
    turnId: _t,
    costMicros: _c,
    capsCrossed: _cc,
    delivery: _d,
    submission: _sub,
    ...base
  } = existing;
  // A submitted run keeps its job's id unless the finish names another.
  const kept =
    existing.submission && state === "submitted" && !f.submission
      ? { submission: existing.submission }
      : {};
  const next = normalizeRoutineRun({ ...base, ...kept, ...meta, state, updatedAt: at }).run;
  const same = existing.owner === f.owner && existing.attempt === f.attempt;
  if (same && existing.state === "running") return { action: "update", run: next };
  if (same && routineRunText(existing) === routineRunText(next))
    return { action: "replayed", run: existing };
  throw new RoutineRunConflictError(
    `the run is ${existing.state}${same ? "" : " under another claim"}: only its claimer's running run can finish`,
  );
}

/** `running` → `reconciliation_required` (`interrupted`). */
export function interruptedRun(existing: RoutineRun, at: number): RoutineRun {
  return normalizeRoutineRun({
    ...existing,
    state: "reconciliation_required",
    reason: "interrupted",
    updatedAt: at,
  }).run;
}

/** A resolution validated before any I/O. */
export function normalizeRoutineResolve(input: unknown): {
  readonly resolve: RoutineResolve;
  readonly key: string;
} {
  const r = closedObject("resolve", snapshot(input, LIMITS), [
    "scope",
    "routineId",
    "slot",
    "action",
    "at",
    "owner",
  ]);
  const { scope, key } = scopeKey(r.scope);
  const action = validateOneOf("resolve.action", r.action, ROUTINE_RESOLVE_ACTIONS);
  if (action === "rerun" && r.owner === undefined)
    throw new ValidationError("resolve.owner", "required", "a rerun names its claimer");
  const resolve: RoutineResolve = Object.freeze({
    scope,
    routineId: validateId("resolve.routineId", r.routineId),
    slot: validateTime("resolve.slot", r.slot),
    action,
    at: validateTime("resolve.at", r.at),
    ...(r.owner !== undefined ? { owner: validateId("resolve.owner", r.owner) } : {}),
  });
  return Object.freeze({ resolve, key });
}

/** What an operator's resolution makes of the stored run. */
export function resolveTransition(existing: RoutineRun | undefined, r: RoutineResolve): RoutineRun {
  if (existing === undefined) throw new RoutineRunConflictError("no run of this slot is recorded");
  const closed =
    existing.reason === "operator_abandoned" || existing.reason === "operator_completed";
  if ((existing.state !== "reconciliation_required" && existing.state !== "failed") || closed) {
    throw new RoutineRunConflictError(
      `a ${existing.state} run${closed ? " an operator closed" : ""} is not the operator's to resolve`,
    );
  }
  const { reason: _r, ...base } = existing;
  if (r.action === "abandon")
    return normalizeRoutineRun({
      ...base,
      state: "failed",
      reason: "operator_abandoned",
      updatedAt: r.at,
    }).run;
  if (r.action === "confirm_completed")
    return normalizeRoutineRun({
      ...base,
      state: "completed",
      reason: "operator_completed",
      updatedAt: r.at,
    }).run;
  const {
    turnId: _t,
    costMicros: _c,
    capsCrossed: _cc,
    delivery: _d,
    submission: _s,
    ...fresh
  } = base;
  return normalizeRoutineRun({
    ...fresh,
    state: "running",
    attempt: existing.attempt + 1,
    owner: r.owner,
    claimedAt: r.at,
    updatedAt: r.at,
  }).run;
}
