import { deepFreeze } from "../freeze.js";
import type { Msg } from "../messages.js";
import type { Scope } from "../scope.js";
import { canonicalJson, type JsonValue } from "../snapshot.js";
import type { NotDispatchedCause, UsageEvidence } from "../usage.js";
import type { Admission } from "./admissions.js";
import type { AuditEvent, AuditRecord } from "./audit.js";
import { StoreUnavailableError } from "./errors.js";
import type { ExecutionClaim, ExecutionRecord, ExecutionState } from "./execution.js";
import type { SessionLabels } from "./labels.js";
import type {
  ParkedAsk,
  ParkedTurn,
  ParkedTurnState,
  ParkedTurnSummary,
  TurnOutput,
} from "./parked.js";
import { parkedTurnOf, summaryOf } from "./parked-rules.js";
import type { ResultRecord, ResultState } from "./results.js";
import type { SessionSummary } from "./sessions.js";
import type { SettlementInput, SettlementRecord } from "./settlements.js";
import { resultView } from "./transitions.js";

/**
 * One codec per record for the SQL stores: a row as SQLite and PostgreSQL both return it (the
 * same column names; integers as JS numbers, PostgreSQL's int8 included; JSON columns as text
 * with their format version `v`) back to the frozen record the contract returns.
 */

/** The record format of every JSON column the SQL stores write; reading another is refused, never guessed. */
export const RECORD_VERSION = 1;

/** A scope's partition key `org/uid` (as `scopeKey` makes it; neither part contains `/`) back to a frozen scope. */
export function scopeFromKey(key: string): Scope {
  const slash = key.indexOf("/");
  return Object.freeze({ org: key.slice(0, slash), uid: key.slice(slash + 1) });
}

/** Parses a versioned JSON column into a deep-frozen value; an unknown version is refused. */
export function decodeJson<T>(version: number, text: string): T {
  if (version !== RECORD_VERSION) {
    throw new StoreUnavailableError(
      `a stored record has format version ${version}; this build reads ${RECORD_VERSION}`,
    );
  }
  return deepFreeze(JSON.parse(text)) as T;
}

export interface AdmissionRow {
  readonly scope: string;
  readonly admission_id: string;
  readonly session_id: string;
  readonly root_key: string;
  readonly kind: Admission["kind"];
  readonly state: Admission["state"];
  readonly release_reason: "failed" | "expired" | null;
  readonly created_at: number;
  readonly deadline_at: number;
}

export function admissionFromRow(row: AdmissionRow): Admission {
  return Object.freeze({
    admissionId: row.admission_id,
    scope: scopeFromKey(row.scope),
    sessionId: row.session_id,
    rootKey: row.root_key,
    kind: row.kind,
    state: row.state,
    createdAt: row.created_at,
    deadlineAt: row.deadline_at,
    ...(row.release_reason ? { releaseReason: row.release_reason } : {}),
  });
}

/** A journal row: the claim as canonical JSON text, the state and what the transitions added. */
export interface ExecutionRow {
  readonly claim: string;
  readonly state: ExecutionState;
  readonly fence_token: number;
  readonly v: number;
  readonly evidence: string | null;
  readonly not_dispatched_cause: NotDispatchedCause | null;
  readonly settlement_id: string | null;
  readonly updated_at: number;
}

export function executionFromRow(row: ExecutionRow): ExecutionRecord {
  return Object.freeze({
    ...decodeJson<ExecutionClaim>(row.v, row.claim),
    state: row.state,
    fenceToken: row.fence_token,
    updatedAt: row.updated_at,
    ...(row.evidence === null ? {} : { evidence: decodeJson<UsageEvidence>(row.v, row.evidence) }),
    ...(row.not_dispatched_cause === null ? {} : { notDispatchedCause: row.not_dispatched_cause }),
    ...(row.settlement_id === null ? {} : { settlementId: row.settlement_id }),
  });
}

/** A journal transition: the state it moves to and what it records. */
export interface ExecutionChange {
  readonly state: ExecutionState;
  readonly evidence?: UsageEvidence;
  readonly cause?: NotDispatchedCause;
  readonly settlementId?: string;
}

/** What a transition writes, column by column; `null` leaves the column as it is (the updates `COALESCE`). */
export interface ExecutionChangeColumns {
  readonly state: ExecutionState;
  readonly evidence: string | null;
  readonly not_dispatched_cause: NotDispatchedCause | null;
  readonly settlement_id: string | null;
}

export function executionChangeColumns(change: ExecutionChange): ExecutionChangeColumns {
  return {
    state: change.state,
    evidence:
      change.evidence === undefined ? null : canonicalJson(change.evidence as unknown as JsonValue),
    not_dispatched_cause: change.cause ?? null,
    settlement_id: change.settlementId ?? null,
  };
}

/** The evidence column of a prepared record the expiry sweep ends as not dispatched. */
export const EXPIRED_EVIDENCE_COLUMN = canonicalJson({
  status: "not_dispatched",
  cause: "expired",
});

export interface ResultRow {
  readonly result_id: string;
  readonly session_id: string;
  readonly binding: string;
  readonly sensitivity: ResultRecord["sensitivity"];
  readonly max_chars: number;
  readonly expires_at: number;
  readonly state: ResultState;
  readonly v: number;
  readonly envelope: string | null;
}

/** The result a reader sees at `now` (see `resultView`). */
export function resultFromRow(row: ResultRow, now: number): ResultRecord {
  const envelope = row.envelope === null ? undefined : decodeJson<JsonValue>(row.v, row.envelope);
  const r = {
    resultId: row.result_id,
    sessionId: row.session_id,
    binding: row.binding,
    sensitivity: row.sensitivity,
    expiresAt: row.expires_at,
  };
  return resultView(r, row.state, envelope, now);
}

/** A settlement row: the normalized input as canonical JSON text. */
export interface SettlementRow {
  readonly v: number;
  readonly record: string;
}

export function settlementFromRow(
  row: SettlementRow,
  status: SettlementRecord["status"] = "applied",
): SettlementRecord {
  return Object.freeze({ ...decodeJson<SettlementInput>(row.v, row.record), status });
}

export interface TenantDayRow {
  readonly day: string;
  readonly usd_micros: number;
}

export function tenantDayFromRow(row: TenantDayRow): {
  readonly day: string;
  readonly usdMicros: number;
} {
  return Object.freeze({ day: row.day, usdMicros: row.usd_micros });
}

export interface MessageRow {
  readonly v: number;
  readonly body: string;
}

export function messageFromRow(row: MessageRow): Msg {
  return decodeJson<Msg>(row.v, row.body);
}

export interface SessionSummaryRow {
  readonly session_id: string;
  readonly revision: number;
  readonly updated_at: number;
}

export function sessionSummaryFromRow(row: SessionSummaryRow): SessionSummary {
  return Object.freeze({
    sessionId: row.session_id,
    revision: row.revision,
    updatedAt: row.updated_at,
  });
}

export interface AuditRow {
  readonly seq: number;
  readonly v: number;
  readonly event: string;
}

export function auditFromRow(row: AuditRow): AuditRecord {
  return Object.freeze({
    ...decodeJson<AuditEvent>(row.v, row.event),
    seq: row.seq,
  }) as AuditRecord;
}

/** A session's labels column: canonical JSON of the normalized labels (written without a format version). */
export function labelsFromText(text: string): SessionLabels {
  return deepFreeze(JSON.parse(text) as SessionLabels);
}

/** A parked turn's row: its asks (and, when selected, its continuation) as JSON text of format `v`. */
export interface ParkedTurnRow {
  readonly scope: string;
  readonly root_key: string;
  readonly session_id: string;
  readonly admission_id: string;
  readonly state: ParkedTurnState;
  readonly v: number;
  readonly asks: string;
  readonly parked_at: number;
  readonly expires_at: number;
  readonly runs: number;
}

/** The row's fields as `parkedTurnOf` takes them, `continuation` and `outputs` given. */
function parkedFields(
  row: ParkedTurnRow,
  continuation: JsonValue,
  outputs: readonly TurnOutput[] = [],
) {
  return {
    scope: scopeFromKey(row.scope),
    sessionId: row.session_id,
    rootKey: row.root_key,
    admissionId: row.admission_id,
    state: row.state,
    asks: decodeJson<readonly ParkedAsk[]>(row.v, row.asks),
    parkedAt: row.parked_at,
    expiresAt: row.expires_at,
    runs: row.runs,
    continuation,
    outputs,
  };
}

/** A turn output's row: its message as JSON text of format `v`. */
export interface TurnOutputRow {
  readonly digest: string;
  readonly v: number;
  readonly message: string;
}

/** A turn's outputs from their rows (read in digest order). */
export function turnOutputsFromRows(rows: readonly TurnOutputRow[]): readonly TurnOutput[] {
  return Object.freeze(
    rows.map((r) =>
      Object.freeze({ digest: r.digest, message: decodeJson<JsonValue>(r.v, r.message) }),
    ),
  );
}

export function parkedTurnFromRow(
  row: ParkedTurnRow & { readonly continuation: string },
  outputs: readonly TurnOutputRow[] = [],
): ParkedTurn {
  return parkedTurnOf(
    parkedFields(row, decodeJson<JsonValue>(row.v, row.continuation), turnOutputsFromRows(outputs)),
  );
}

/** A summary from a row read without its continuation (listings never load it). */
export function parkedSummaryFromRow(row: ParkedTurnRow): ParkedTurnSummary {
  return summaryOf(parkedTurnOf(parkedFields(row, null)));
}
