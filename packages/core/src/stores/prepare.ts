import type { Msg } from "../messages.js";
import { ValidationError } from "../errors.js";
import { type Scope, validateId } from "../scope.js";
import { canonicalJson, type JsonValue } from "../snapshot.js";
import type { NotDispatchedCause, UsageEvidence } from "../usage.js";
import type { AdmissionStore } from "./admissions.js";
import type { AuditLog } from "./audit.js";
import type { SessionErasure } from "./erasure.js";
import type { ModelJobStore } from "./model-jobs.js";
import type { ParkedTurnStore } from "./parked.js";
import type { UsageInbox } from "./usage-inbox.js";
import type { EpisodeStore, MemoryErasure, ProfileStore } from "./memory-records.js";
import type { RoutineRunStore } from "./routine-runs.js";
import type { RoutineStore } from "./routines.js";
import {
  type ExecutionChange,
  type ExecutionChangeColumns,
  type ExecutionRow,
  executionChangeColumns,
  executionFromRow,
  type ResultRow,
  resultFromRow,
  type SessionSummaryRow,
  type SettlementRow,
  sessionSummaryFromRow,
  settlementFromRow,
  type TenantDayRow,
  tenantDayFromRow,
} from "./codecs.js";
import { ConflictError, SettlementConflictError, StaleFenceError } from "./errors.js";
import type {
  ClaimOptions,
  ClaimResult,
  ExecutionClaim,
  ExecutionRecord,
  ExecutionState,
  ExecutionStore,
  Fence,
} from "./execution.js";
import type { SessionLabelStore } from "./labels.js";
import {
  eventIdsOf,
  lastRotation,
  normalizeCancelCause,
  normalizeClaim,
  normalizeClaimOptions,
  normalizeEnvelope,
  normalizeFence,
  normalizeFenceOpts,
  normalizeMessages,
  normalizeReceivedEvidence,
  normalizeReconcile,
  normalizeReservation,
  normalizeSettlement,
} from "./normalize.js";
import type {
  ExecutionResultStore,
  ResultRecord,
  ResultReservation,
  ReserveResult,
} from "./results.js";
import {
  closedObject,
  decodeCursor,
  onlyKey,
  PAGE,
  pageLimit,
  pageOfFetched,
  scopeKey,
  validateDay,
  validateOrg,
  validateTime,
} from "./rules.js";
import type { SessionStore, SessionSummary, SessionView } from "./sessions.js";
import type {
  CostSettlementStore,
  SettlementInput,
  SettlementRecord,
  SpendStore,
} from "./settlements.js";
import { oversize, putRefusal } from "./transitions.js";

/**
 * What the SQL stores (SQLite, PostgreSQL) do before and after their SQL, one function per
 * operation: `prepare…` validates and normalizes a call's input in the contract's order (so both
 * refuse the same input with the same error) and returns what the statements need; the functions
 * after it turn what the statements returned into the frozen records and pages the contract returns.
 */

/** A page request, validated: the partition key, the page size and the cursor's position. */
interface Page<A> {
  readonly key: string;
  readonly limit: number;
  readonly after: A;
}

/** A scope's partition key and one validated id in it (`get`, `load`, `erase`, a transition…). */
export function prepareKeyed(
  scope: Scope,
  field: string,
  value: string,
): { readonly key: string; readonly id: string } {
  const { key } = scopeKey(scope);
  return { key, id: validateId(field, value) };
}

// Sessions

const NO_MESSAGES: readonly Msg[] = Object.freeze([]);

/** What `load` returns for a session with no row (`erased: false`) or an erased one. */
export function emptySessionView(erased: boolean): SessionView {
  return Object.freeze({ messages: NO_MESSAGES, revision: 0, offset: 0, erased });
}

export function prepareAppend(
  scope: Scope,
  sessionId: string,
  messages: readonly Msg[],
  opts: unknown,
): {
  readonly key: string;
  readonly id: string;
  readonly admissionId: string;
  readonly now: number;
  readonly batch: readonly Msg[];
  readonly events: readonly string[];
  readonly bodies: readonly string[];
} {
  const { key, id } = prepareKeyed(scope, "sessionId", sessionId);
  const o = closedObject("opts", opts, ["admissionId", "now"]);
  const admissionId = validateId("admissionId", o.admissionId);
  const now = validateTime("now", o.now);
  const batch = normalizeMessages(messages);
  return {
    key,
    id,
    admissionId,
    now,
    batch,
    events: eventIdsOf(batch),
    bodies: batch.map((m) => JSON.stringify(m)),
  };
}

/** Where an append of `batch` at revision `start` leaves the session: its new revision and view offset. */
export function appendedPositions(
  batch: readonly Msg[],
  start: number,
  viewOffset: number,
): { readonly revision: number; readonly offset: number } {
  const marker = lastRotation(batch);
  return { revision: start + batch.length, offset: marker >= 0 ? start + marker : viewOffset };
}

export function prepareFindEvents(
  scope: Scope,
  sessionId: string,
  eventIds: readonly string[],
): { readonly key: string; readonly id: string; readonly ids: readonly string[] } {
  const { key, id } = prepareKeyed(scope, "sessionId", sessionId);
  if (!Array.isArray(eventIds)) throw new TypeError("eventIds must be an array");
  return { key, id, ids: eventIds.map((e, i) => validateId(`eventIds[${i}]`, e)) };
}

/** No events asked for: no messages (the stores skip the query). */
export const NO_EVENTS = NO_MESSAGES;

/** `after`: the session id the page starts after (`""` for the first page). */
export function prepareSessionList(scope: Scope, opts: unknown): Page<string> {
  const { key } = scopeKey(scope);
  const o = closedObject("opts", opts, ["cursor", "limit"]);
  const limit = pageLimit(o.limit, PAGE.sessions.def, PAGE.sessions.max);
  const after = decodeCursor(o.cursor, ["string"]);
  return { key, limit, after: (after?.[0] as string | undefined) ?? "" };
}

export function sessionPage(
  rows: readonly SessionSummaryRow[],
  limit: number,
): { readonly items: readonly SessionSummary[]; readonly nextCursor?: string } {
  return Object.freeze(pageOfFetched(rows.map(sessionSummaryFromRow), limit, (s) => [s.sessionId]));
}

// Execution

export function prepareClaim(
  claim: ExecutionClaim,
  opts: ClaimOptions | undefined,
): {
  readonly c: ExecutionClaim;
  readonly o: ClaimOptions;
  readonly key: string;
  readonly text: string;
} {
  const c = normalizeClaim(claim);
  const o = normalizeClaimOptions(opts);
  const { key } = scopeKey(c.scope);
  return { c, o, key, text: canonicalJson(c as unknown as JsonValue) };
}

/** A claim whose operation id is already there: the record when `text` is the same claim, else a conflict. */
export function existingClaim(row: ExecutionRow, c: ExecutionClaim, text: string): ClaimResult {
  if (row.claim !== text)
    throw new ConflictError(
      "execution_conflict",
      `operation "${c.operationId}" was claimed with different input`,
    );
  return Object.freeze({ status: "exists", record: executionFromRow(row) });
}

export const executionOf = (row: ExecutionRow | undefined): ExecutionRecord | undefined =>
  row ? executionFromRow(row) : undefined;

/** A new claim: the first fence and the inserted record. */
export function claimedResult(c: ExecutionClaim, row: ExecutionRow): ClaimResult {
  const fence: Fence = Object.freeze({ scope: c.scope, operationId: c.operationId, token: 1 });
  return Object.freeze({ status: "claimed", fence, record: executionFromRow(row) });
}

/** One fenced transition of the journal: which method it is, the state it needs and what it writes. */
export interface ExecutionStep {
  readonly name: "dispatch" | "receive" | "settle" | "complete" | "cancelPrepared";
  readonly from: ExecutionState;
  readonly change: ExecutionChange;
}

/**
 * The journal's fenced transitions, written once over a store's one conditional update (`step`):
 * each validates its argument (before the fence, as the contract orders it) and names the state it
 * needs and what it writes. `step.name` lets a store add what one transition needs (a dispatch is a
 * durability point; a cancelled claim releases its reservation).
 */
export abstract class FencedJournal {
  protected abstract step(fence: Fence, now: number, step: ExecutionStep): Promise<ExecutionRecord>;

  async dispatch(fence: Fence, now: number): Promise<ExecutionRecord> {
    return this.step(fence, now, {
      name: "dispatch",
      from: "prepared",
      change: { state: "dispatching" },
    });
  }

  async receive(fence: Fence, evidence: UsageEvidence, now: number): Promise<ExecutionRecord> {
    return this.step(fence, now, {
      name: "receive",
      from: "dispatching",
      change: { state: "received", evidence: normalizeReceivedEvidence(evidence) },
    });
  }

  async settle(fence: Fence, settlementId: string, now: number): Promise<ExecutionRecord> {
    return this.step(fence, now, {
      name: "settle",
      from: "received",
      change: { state: "settled", settlementId: validateId("settlementId", settlementId) },
    });
  }

  async complete(fence: Fence, now: number): Promise<ExecutionRecord> {
    return this.step(fence, now, {
      name: "complete",
      from: "settled",
      change: { state: "completed" },
    });
  }

  async cancelPrepared(
    fence: Fence,
    cause: Exclude<NotDispatchedCause, "expired">,
    now: number,
  ): Promise<ExecutionRecord> {
    const c = normalizeCancelCause(cause);
    return this.step(fence, now, {
      name: "cancelPrepared",
      from: "prepared",
      change: {
        state: "not_dispatched",
        cause: c,
        evidence: { status: "not_dispatched", cause: c },
      },
    });
  }
}

export function prepareStep(
  fence: Fence,
  now: number,
  step: ExecutionStep,
): {
  readonly f: Fence;
  readonly at: number;
  readonly key: string;
  readonly cols: ExecutionChangeColumns;
} {
  const f = normalizeFence(fence);
  const at = validateTime("now", now);
  const { key } = scopeKey(f.scope);
  return { f, at, key, cols: executionChangeColumns(step.change) };
}

/** A transition that matched no row: why, from the record as it is now. */
export function staleStep(
  current: ExecutionRow | undefined,
  token: number,
  from: ExecutionState,
): StaleFenceError {
  if (current && current.fence_token === token)
    return new StaleFenceError(`the record is ${current.state}, not ${from}`);
  return new StaleFenceError();
}

/** `after`: (createdAt, operationId) the page starts after. */
/** `resolved`: whether completed and not_dispatched records are listed too (a boolean, default false). */
export function prepareExecutionList(
  scope: Scope,
  opts: unknown,
): Page<readonly [number, string]> & { readonly resolved: boolean } {
  const { key } = scopeKey(scope);
  const o = closedObject("opts", opts, ["cursor", "limit", "resolved"]);
  const limit = pageLimit(o.limit, PAGE.execution.def, PAGE.execution.max);
  const after = decodeCursor(o.cursor, ["number", "string"]) ?? [-1, ""];
  if (o.resolved !== undefined && typeof o.resolved !== "boolean")
    throw new ValidationError("opts.resolved", "boolean", "resolved must be a boolean");
  return { key, limit, after: after as readonly [number, string], resolved: o.resolved === true };
}

export function executionPage(
  rows: readonly ExecutionRow[],
  limit: number,
): { readonly items: readonly ExecutionRecord[]; readonly nextCursor?: string } {
  return Object.freeze(
    pageOfFetched(rows.map(executionFromRow), limit, (r) => [r.createdAt, r.operationId]),
  );
}

/** `only`: the one scope's key, or `null` for every scope. */
export function prepareReconcile(input: unknown): {
  readonly now: number;
  readonly only: string | null;
} {
  const r = normalizeReconcile(input);
  return { now: r.now, only: onlyKey(r.scope) };
}

/** The swept records, in (createdAt, operationId) order. */
export function reconciledRecords(rows: readonly ExecutionRow[]): readonly ExecutionRecord[] {
  const records = rows.map(executionFromRow);
  records.sort((a, b) => a.createdAt - b.createdAt || (a.operationId < b.operationId ? -1 : 1));
  return Object.freeze(records);
}

// Results

export function prepareReserve(reservation: ResultReservation): {
  readonly r: ResultReservation;
  readonly key: string;
} {
  const r = normalizeReservation(reservation);
  return { r, key: scopeKey(r.scope).key };
}

export function reserveResult(
  status: "reserved" | "exists",
  row: ResultRow,
  createdAt: number,
): ReserveResult {
  return Object.freeze({ status, record: resultFromRow(row, createdAt) });
}

export function preparePut(
  scope: Scope,
  resultId: string,
  envelope: JsonValue,
  now: number,
  opts: unknown,
): {
  readonly key: string;
  readonly id: string;
  readonly at: number;
  readonly admissionId?: string;
  readonly text: string;
} {
  const { key, id } = prepareKeyed(scope, "resultId", resultId);
  const at = validateTime("now", now);
  const o = normalizeFenceOpts(opts);
  const e = normalizeEnvelope(envelope);
  return o.admissionId === undefined
    ? { key, id, at, text: e.text }
    : { key, id, at, admissionId: o.admissionId, text: e.text };
}

/**
 * A put's checks on the row it read (after the fence): throws the refusal, returns the record when
 * the same envelope is already stored, or `undefined` when the envelope is to be written.
 */
export function putOutcome(
  id: string,
  row: ResultRow | undefined,
  text: string,
  at: number,
): ResultRecord | undefined {
  const refusal = putRefusal(id, row?.state, row?.expires_at ?? 0, at);
  if (refusal || !row) throw refusal;
  if (row.state === "stored") {
    if (row.envelope === text) return resultFromRow(row, at);
    throw new ConflictError(
      "result_conflict",
      `result "${id}" was stored with a different envelope`,
    );
  }
  const tooBig = oversize(text, row.max_chars);
  if (tooBig) throw tooBig;
  return undefined;
}

export function prepareResultGet(
  scope: Scope,
  resultId: string,
  now: number,
): { readonly key: string; readonly id: string; readonly at: number } {
  const { key, id } = prepareKeyed(scope, "resultId", resultId);
  return { key, id, at: validateTime("now", now) };
}

// Settlements and spend

export function prepareSettle(input: SettlementInput): {
  readonly s: SettlementInput;
  readonly key: string;
  readonly text: string;
  readonly id: string;
} {
  const s = normalizeSettlement(input);
  const { key } = scopeKey(s.scope);
  return { s, key, text: canonicalJson(s as unknown as JsonValue), id: s.receipt.settlementId };
}

export const appliedSettlement = (s: SettlementInput): SettlementRecord =>
  Object.freeze({ ...s, status: "applied" as const });

/** A settlement id already there: a replay when it is the same settlement, else a conflict. */
export function replayedSettlement(
  existing: SettlementRow | undefined,
  text: string,
  id: string,
): SettlementRecord {
  if (existing?.record !== text) throw new SettlementConflictError(id);
  return settlementFromRow(existing, "replayed");
}

/** `sessionId` and `turnId` are `null` when not filtered on; `after`: (at, settlementId) the page starts after. */
export function prepareSettlementList(
  scope: Scope,
  opts: unknown,
): Page<readonly [number, string]> & {
  readonly sessionId: string | null;
  readonly turnId: string | null;
} {
  const { key } = scopeKey(scope);
  const o = closedObject("opts", opts, ["sessionId", "turnId", "cursor", "limit"]);
  const sessionId = o.sessionId === undefined ? null : validateId("sessionId", o.sessionId);
  const turnId = o.turnId === undefined ? null : validateId("turnId", o.turnId);
  const limit = pageLimit(o.limit, PAGE.settlements.def, PAGE.settlements.max);
  const after = decodeCursor(o.cursor, ["number", "string"]) ?? [-1, ""];
  return { key, sessionId, turnId, limit, after: after as readonly [number, string] };
}

export function settlementPage(
  rows: readonly SettlementRow[],
  limit: number,
): { readonly items: readonly SettlementRecord[]; readonly nextCursor?: string } {
  return Object.freeze(
    pageOfFetched(settlementsOf(rows), limit, (r) => [r.at, r.receipt.settlementId]),
  );
}

export const settlementOf = (row: SettlementRow | undefined): SettlementRecord | undefined =>
  row ? settlementFromRow(row) : undefined;

export function settlementsOf(rows: readonly SettlementRow[]): readonly SettlementRecord[] {
  return Object.freeze(rows.map((r) => settlementFromRow(r)));
}

export function preparePending(
  scope: Scope,
  consumer: string,
  limit: number | undefined,
): { readonly key: string; readonly consumer: string; readonly max: number } {
  const { key, id } = prepareKeyed(scope, "consumer", consumer);
  return { key, consumer: id, max: pageLimit(limit, PAGE.pending.def, PAGE.pending.max) };
}

export function prepareAcknowledge(
  scope: Scope,
  consumer: string,
  settlementId: string,
): { readonly key: string; readonly consumer: string; readonly id: string } {
  const { key, id: c } = prepareKeyed(scope, "consumer", consumer);
  return { key, consumer: c, id: validateId("settlementId", settlementId) };
}

export function preparePeek(
  scope: Scope,
  sessionId: string,
  day: string,
): { readonly key: string; readonly org: string; readonly id: string; readonly day: string } {
  const { scope: s, key } = scopeKey(scope);
  const id = validateId("sessionId", sessionId);
  return { key, org: s.org, id, day: validateDay("day", day) };
}

export function spendView(
  sessionMicros: number | null | undefined,
  tenantDayMicros: number | null | undefined,
): { readonly sessionMicros: number; readonly tenantDayMicros: number } {
  return Object.freeze({
    sessionMicros: sessionMicros ?? 0,
    tenantDayMicros: tenantDayMicros ?? 0,
  });
}

/** The day range, inclusive (`""` and `9999-12-31` when open). */
export function prepareTenantDays(
  org: string,
  opts: unknown,
): { readonly org: string; readonly from: string; readonly to: string } {
  const tenant = validateOrg(org);
  const o = closedObject("opts", opts, ["from", "to"]);
  const from = o.from === undefined ? "" : validateDay("from", o.from);
  const to = o.to === undefined ? "9999-12-31" : validateDay("to", o.to);
  return { org: tenant, from, to };
}

export function tenantDaysOf(
  rows: readonly TenantDayRow[],
): readonly { readonly day: string; readonly usdMicros: number }[] {
  return Object.freeze(rows.map(tenantDayFromRow));
}

// The store set

/** The stores every durable store set (SQLite, PostgreSQL) offers under these names. */
export interface DurableStores {
  readonly admissions: AdmissionStore;
  /** Turns parked on permission asks (issue 25): a park and a claim move `admissions` in one transaction. */
  readonly parked: ParkedTurnStore;
  readonly sessions: SessionStore;
  readonly execution: ExecutionStore;
  /** The same execution store, under the name `ConversationStores` gives it. */
  readonly journal: ExecutionStore;
  /** Step results, in the main file or schema. */
  readonly results: ExecutionResultStore;
  /** Conversation roots' final results, in their own namespace (SQLite's attached root-results file, PostgreSQL's root schema). */
  readonly rootResults: ExecutionResultStore;
  readonly settlements: CostSettlementStore;
  readonly spend: SpendStore;
  readonly labels: SessionLabelStore;
  /** Late authoritative usage: evidence for the operator, no dispatch or billing authority. */
  readonly usageInbox: UsageInbox;
  /** Provider batch jobs (`@alma-harness/batch`): their state, so another process collects them. */
  readonly modelJobs: ModelJobStore;
  /** Routines and their runs (`@alma-harness/schedule`); erasure covers both. */
  readonly routines: RoutineStore;
  readonly routineRuns: RoutineRunStore;
  readonly audit: AuditLog;
  /** Episodes and profile facts (issue 18), ranked by the database's own full-text search. */
  readonly episodes: EpisodeStore;
  readonly profiles: ProfileStore;
  /** The memory side of erasure alone (the `erasure` below covers memory too). */
  readonly memoryErasure: MemoryErasure;
  /** Erasure over every store above, in one transaction. */
  readonly erasure: SessionErasure;
}
