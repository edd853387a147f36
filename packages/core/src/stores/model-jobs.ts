import type { CallKind } from "../caps.js";
import { AlmaError, ValidationError } from "../errors.js";
import {
  normalizeModelChoice,
  type ModelChoice,
  type Sensitivity,
  SENSITIVITIES,
  type Tier,
  TIERS,
} from "../routing.js";
import { type Scope, validateId } from "../scope.js";
import { snapshot } from "../snapshot.js";
import { ConflictError } from "./errors.js";
import { normalizeSpendTotals } from "./settlements.js";
import {
  closedObject,
  decodeCursor,
  encodeCursor,
  PAGE,
  pageLimit,
  sameJson,
  scopeKey,
  validateCount,
  validateOneOf,
  validateTime,
} from "./rules.js";

/**
 * A model job's life (spec: model-jobs), one way only:
 * - `claimed`: every item's journal claim is committed (its worst case reserved); nothing was sent;
 * - `submitting`: every item is `dispatching` in the journal and the submission is (or was) on its
 *   way; an acknowledgement lost here is reconciled by the provider's batch id or the items' custom
 *   ids, never by submitting again;
 * - `submitted`: the provider's batch id is recorded; the job is polled and collected;
 * - `collected`: every item settled through its own governed receipt;
 * - `cancelled`: the job was given up before anything was sent (its items `not_dispatched`).
 */
export type ModelJobState = "claimed" | "submitting" | "submitted" | "collected" | "cancelled";
export const MODEL_JOB_STATES: readonly ModelJobState[] = Object.freeze([
  "claimed",
  "submitting",
  "submitted",
  "collected",
  "cancelled",
]);

/** What the provider said of one item: it answered (`succeeded`), or it did not (`errored`, `canceled`, `expired`). */
export type ModelJobItemOutcome = "succeeded" | "errored" | "canceled" | "expired";
export const MODEL_JOB_ITEM_OUTCOMES: readonly ModelJobItemOutcome[] = Object.freeze([
  "succeeded",
  "errored",
  "canceled",
  "expired",
]);

/** At most this many items per job (our bound, under both providers' own). */
export const MODEL_JOB_MAX_ITEMS = 1_000;
/** A custom id as both providers accept it (Anthropic's rule, the stricter one). */
const CUSTOM_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * One item of a job: its governed call's identity and claim (plain data, content-free: the prompt
 * went to the provider and is kept nowhere here). `fenceToken`, `worstMicros`, `claimedAt` and
 * `before` are the claim's, as the execution's deferred face returned them; `settlementId` and
 * `outcome` are set once, when the item settles.
 */
export interface ModelJobItem {
  readonly customId: string;
  readonly operationId: string;
  /** The session's id; after an erasure of the session, its mark. */
  readonly sessionId: string;
  readonly rootKey: string;
  readonly turnId: string;
  readonly kind: CallKind;
  readonly choice: ModelChoice;
  readonly route: { readonly tier: Tier; readonly sensitivity: Sensitivity };
  readonly fenceToken: number;
  readonly worstMicros: number;
  readonly claimedAt: number;
  readonly before?: { readonly sessionMicros: number; readonly tenantDayMicros: number };
  readonly settlementId?: string;
  readonly outcome?: ModelJobItemOutcome;
}

export interface ModelJob {
  readonly scope: Scope;
  readonly jobId: string;
  /** The transport that submits it (its id: which provider's batch API). */
  readonly transportId: string;
  readonly state: ModelJobState;
  readonly items: readonly ModelJobItem[];
  readonly createdAt: number;
  readonly updatedAt: number;
  /** When the submission started (`submitting`): reconciliation looks for batches from here on. */
  readonly submittingAt?: number;
  readonly batchId?: string;
}

/** A state change: only along the life above; `batchId` exactly with `submitting → submitted`. */
export interface ModelJobAdvance {
  readonly from: ModelJobState;
  readonly to: ModelJobState;
  readonly at: number;
  readonly batchId?: string;
}

const NEXT: Readonly<Record<ModelJobState, readonly ModelJobState[]>> = Object.freeze({
  claimed: ["submitting", "cancelled"],
  submitting: ["submitted"],
  submitted: ["collected"],
  collected: [],
  cancelled: [],
});

/**
 * Where model jobs are recorded (so a job submitted by one process is collected by another).
 * Guarantees, the same in memory, SQLite and PostgreSQL:
 * - `create` stores a `claimed` job once: equal input again is `exists` with the stored job; a
 *   different job under the id throws `ModelJobConflictError`.
 * - `advance` moves the state along the life only, atomically from `from`: a job in another state
 *   throws `ModelJobStateError` (two processes advancing one job: one wins). `collected` needs
 *   every item settled.
 * - `settleItem` records an item's settlement once: the same again is `replayed`; a different one
 *   throws `ModelJobConflictError`; concurrent settlers of one item record one.
 * - `list` reads one scope's jobs ascending by `(createdAt, jobId)`, optionally of one state.
 * - Input is validated before any I/O (typed errors). Erasure replaces an item's session id by its mark.
 */
export interface ModelJobStore {
  create(job: ModelJob): Promise<{ readonly status: "created" | "exists"; readonly job: ModelJob }>;
  get(scope: Scope, jobId: string): Promise<ModelJob | undefined>;
  advance(scope: Scope, jobId: string, change: ModelJobAdvance): Promise<ModelJob>;
  settleItem(
    scope: Scope,
    jobId: string,
    customId: string,
    settled: { readonly settlementId: string; readonly outcome: ModelJobItemOutcome },
  ): Promise<{ readonly status: "applied" | "replayed"; readonly job: ModelJob }>;
  list(
    scope: Scope,
    query?: { readonly state?: ModelJobState; readonly cursor?: string; readonly limit?: number },
  ): Promise<{ readonly items: readonly ModelJob[]; readonly nextCursor?: string }>;
}

export class ModelJobConflictError extends ConflictError {
  constructor(
    message = "a different model job (or item settlement) is already recorded under this id",
  ) {
    super("model_job_conflict", message);
  }
}

/** The job is not in the state the change needs (another process moved it, or the change is not on the life). */
export class ModelJobStateError extends AlmaError {
  readonly state: ModelJobState | undefined;
  constructor(state: ModelJobState | undefined, message: string) {
    super("model_job_state", message);
    this.state = state;
  }
}

const JOB_FIELDS = [
  "scope",
  "jobId",
  "transportId",
  "state",
  "items",
  "createdAt",
  "updatedAt",
  "submittingAt",
  "batchId",
] as const;
const ITEM_FIELDS = [
  "customId",
  "operationId",
  "sessionId",
  "rootKey",
  "turnId",
  "kind",
  "choice",
  "route",
  "fenceToken",
  "worstMicros",
  "claimedAt",
  "before",
  "settlementId",
  "outcome",
] as const;
const KINDS: readonly CallKind[] = ["main", "direct", "delegate", "summary"];
const LIMITS = Object.freeze({
  maxDepth: 6,
  maxNodes: 40 * MODEL_JOB_MAX_ITEMS + 64,
  maxStringBytes: 256,
  maxTotalBytes: 4_000 * MODEL_JOB_MAX_ITEMS,
});

export function validateCustomId(field: string, value: unknown): string {
  if (typeof value !== "string" || !CUSTOM_ID.test(value))
    throw new ValidationError(
      field,
      "custom_id",
      `${field} must be 1-64 characters of [A-Za-z0-9_-]`,
    );
  return value;
}

function normalizeItem(path: string, input: unknown): ModelJobItem {
  const o = closedObject(path, input, ITEM_FIELDS);
  const route = closedObject(`${path}.route`, o.route, ["tier", "sensitivity"]);
  const before =
    o.before === undefined ? undefined : normalizeSpendTotals(o.before, `${path}.before`);
  if ((o.settlementId === undefined) !== (o.outcome === undefined))
    throw new ValidationError(
      `${path}.settlementId`,
      "together",
      "settlementId and outcome go together",
    );
  return Object.freeze({
    customId: validateCustomId(`${path}.customId`, o.customId),
    operationId: validateId(`${path}.operationId`, o.operationId),
    sessionId: validateId(`${path}.sessionId`, o.sessionId),
    rootKey: validateId(`${path}.rootKey`, o.rootKey),
    turnId: validateId(`${path}.turnId`, o.turnId),
    kind: validateOneOf(`${path}.kind`, o.kind, KINDS),
    choice: normalizeModelChoice(o.choice),
    route: Object.freeze({
      tier: validateOneOf(`${path}.route.tier`, route.tier, TIERS),
      sensitivity: validateOneOf(`${path}.route.sensitivity`, route.sensitivity, SENSITIVITIES),
    }),
    fenceToken: validateCount(`${path}.fenceToken`, o.fenceToken),
    worstMicros: validateCount(`${path}.worstMicros`, o.worstMicros),
    claimedAt: validateTime(`${path}.claimedAt`, o.claimedAt),
    ...(before ? { before } : {}),
    ...(o.settlementId !== undefined
      ? {
          settlementId: validateId(`${path}.settlementId`, o.settlementId),
          outcome: validateOneOf(`${path}.outcome`, o.outcome, MODEL_JOB_ITEM_OUTCOMES),
        }
      : {}),
  });
}

/** A job validated and frozen, with its scope's key; every store calls it before any I/O. */
export function normalizeModelJob(input: unknown): {
  readonly job: ModelJob;
  readonly key: string;
} {
  // Read once through the bounded snapshot: a getter never runs, a Proxy or a cycle is refused.
  const o = closedObject("job", snapshot(input, LIMITS), JOB_FIELDS);
  const { scope, key } = scopeKey(o.scope);
  if (!Array.isArray(o.items) || o.items.length < 1 || o.items.length > MODEL_JOB_MAX_ITEMS) {
    throw new ValidationError(
      "job.items",
      "items_1_max",
      `a job has 1-${MODEL_JOB_MAX_ITEMS} items`,
    );
  }
  const items = Object.freeze(o.items.map((item, i) => normalizeItem(`job.items[${i}]`, item)));
  if (new Set(items.map((i) => i.customId)).size !== items.length)
    throw new ValidationError(
      "job.items",
      "distinct_custom_ids",
      "a job's custom ids must be distinct",
    );
  if (new Set(items.map((i) => i.operationId)).size !== items.length)
    throw new ValidationError(
      "job.items",
      "distinct_operations",
      "a job's operation ids must be distinct",
    );
  const job: ModelJob = Object.freeze({
    scope,
    jobId: validateCustomId("job.jobId", o.jobId),
    transportId: validateId("job.transportId", o.transportId),
    state: validateOneOf("job.state", o.state, MODEL_JOB_STATES),
    items,
    createdAt: validateTime("job.createdAt", o.createdAt),
    updatedAt: validateTime("job.updatedAt", o.updatedAt),
    ...(o.submittingAt !== undefined
      ? { submittingAt: validateTime("job.submittingAt", o.submittingAt) }
      : {}),
    ...(o.batchId !== undefined ? { batchId: validateId("job.batchId", o.batchId) } : {}),
  });
  return { job, key };
}

/** A new job as `create` takes it: `claimed`, no item settled, no batch yet. */
export function normalizeNewModelJob(input: unknown): {
  readonly job: ModelJob;
  readonly key: string;
} {
  const out = normalizeModelJob(input);
  const j = out.job;
  if (
    j.state !== "claimed" ||
    j.batchId !== undefined ||
    j.submittingAt !== undefined ||
    j.items.some((i) => i.settlementId !== undefined)
  ) {
    throw new ValidationError(
      "job.state",
      "claimed",
      "a job is created claimed, with no batch and no item settled",
    );
  }
  return out;
}

/** The change validated against the life (before any I/O): a change off the life is a `ModelJobStateError`. */
export function normalizeAdvance(input: unknown): ModelJobAdvance {
  const o = closedObject("change", input, ["from", "to", "at", "batchId"]);
  const from = validateOneOf("change.from", o.from, MODEL_JOB_STATES);
  const to = validateOneOf("change.to", o.to, MODEL_JOB_STATES);
  if (!NEXT[from].includes(to))
    throw new ModelJobStateError(from, `a job does not go from ${from} to ${to}`);
  const wantsBatch = from === "submitting" && to === "submitted";
  if (wantsBatch !== (o.batchId !== undefined))
    throw new ValidationError(
      "change.batchId",
      "submitted",
      "batchId goes exactly with submitting → submitted",
    );
  return Object.freeze({
    from,
    to,
    at: validateTime("change.at", o.at),
    ...(o.batchId !== undefined ? { batchId: validateId("change.batchId", o.batchId) } : {}),
  });
}

/** The job after `change`, or a `ModelJobStateError` when its state is not `change.from` (or `collected` with an item unsettled). */
export function advancedJob(job: ModelJob | undefined, change: ModelJobAdvance): ModelJob {
  if (job === undefined) throw new ModelJobStateError(undefined, "no such model job");
  if (job.state !== change.from)
    throw new ModelJobStateError(job.state, `the job is ${job.state}, not ${change.from}`);
  if (change.to === "collected" && job.items.some((i) => i.settlementId === undefined))
    throw new ModelJobStateError(job.state, "a job is collected only when every item settled");
  return Object.freeze({
    ...job,
    state: change.to,
    updatedAt: change.at,
    ...(change.to === "submitting" ? { submittingAt: change.at } : {}),
    ...(change.batchId !== undefined ? { batchId: change.batchId } : {}),
  });
}

/** An item settlement's input validated before any I/O. */
export function normalizeItemSettlement(
  customId: unknown,
  settled: unknown,
): {
  readonly customId: string;
  readonly settlementId: string;
  readonly outcome: ModelJobItemOutcome;
} {
  const o = closedObject("settled", settled, ["settlementId", "outcome"]);
  return Object.freeze({
    customId: validateCustomId("customId", customId),
    settlementId: validateId("settlementId", o.settlementId),
    outcome: validateOneOf("outcome", o.outcome, MODEL_JOB_ITEM_OUTCOMES),
  });
}

/** What an item settlement does to an item: `applied` (unsettled before), `replayed` (the same already), or a conflict. */
export function settledItem(
  item: ModelJobItem,
  s: { readonly settlementId: string; readonly outcome: ModelJobItemOutcome },
): { readonly status: "applied" | "replayed"; readonly item: ModelJobItem } {
  if (item.settlementId === undefined)
    return {
      status: "applied",
      item: Object.freeze({ ...item, settlementId: s.settlementId, outcome: s.outcome }),
    };
  if (item.settlementId === s.settlementId && item.outcome === s.outcome)
    return { status: "replayed", item };
  throw new ModelJobConflictError("the item is settled with another settlement");
}

/** Whether `incoming` repeats the stored job as created (its state, times and settlements aside; a session id may be the mark the stored one became). */
export function sameModelJob(
  stored: ModelJob,
  incoming: ModelJob,
  mark: (scope: Scope, sessionId: string) => string,
): boolean {
  if (stored.items.length !== incoming.items.length) return false;
  const sessions = incoming.items.map((item, i) => {
    const kept = stored.items[i]?.sessionId;
    return kept !== undefined && kept === mark(incoming.scope, item.sessionId)
      ? kept
      : item.sessionId;
  });
  const shape = (job: ModelJob, ids: readonly string[]) => ({
    scope: job.scope,
    jobId: job.jobId,
    transportId: job.transportId,
    createdAt: job.createdAt,
    items: job.items.map((item, i) => ({ ...unsettled(item), sessionId: ids[i] })),
  });
  return sameJson(
    shape(
      stored,
      stored.items.map((i) => i.sessionId),
    ),
    shape(incoming, sessions),
  );
}

function unsettled(item: ModelJobItem): ModelJobItem {
  const { settlementId: _s, outcome: _o, ...rest } = item;
  return rest;
}

export function normalizeModelJobQuery(scope: unknown, query: unknown = {}) {
  const { scope: s, key } = scopeKey(scope);
  const q = closedObject("query", query, ["state", "cursor", "limit"]);
  const limit = pageLimit(q.limit, PAGE.settlements.def, PAGE.settlements.max);
  const after = decodeCursor(q.cursor, ["number", "string"]) as
    | readonly [number, string]
    | undefined;
  const state =
    q.state === undefined ? undefined : validateOneOf("query.state", q.state, MODEL_JOB_STATES);
  return {
    scope: s,
    key,
    limit,
    ...(state !== undefined ? { state } : {}),
    ...(after !== undefined ? { after } : {}),
  };
}

export function modelJobKey(job: ModelJob): readonly [number, string] {
  return [job.createdAt, job.jobId];
}

export function modelJobCursor(job: ModelJob): string {
  return encodeCursor(modelJobKey(job));
}

/** The stored JSON of an item (version 1), and back. */
export function modelJobItemText(item: ModelJobItem): string {
  return JSON.stringify({ v: 1, ...unsettled(item) });
}

export function modelJobItemFromText(
  text: string,
  settled: { readonly settlementId: string | null; readonly outcome: string | null },
  path = "item",
): ModelJobItem {
  const parsed = JSON.parse(text) as { v?: unknown };
  if (parsed.v !== 1)
    throw new ValidationError(
      "record",
      "record_version",
      "a model job item row has an unknown version",
    );
  const { v: _v, ...rest } = parsed;
  return normalizeItem(path, {
    ...rest,
    ...(settled.settlementId !== null
      ? { settlementId: settled.settlementId, outcome: settled.outcome }
      : {}),
  });
}

/** A job's row as both SQL stores keep it (`model_jobs`), and an item's (`model_job_items`). */
export interface ModelJobRow {
  readonly job_id: string;
  readonly state: string;
  readonly transport_id: string;
  readonly batch_id: string | null;
  readonly created_at: number | string;
  readonly updated_at: number | string;
  readonly submitting_at: number | string | null;
}
export interface ModelJobItemRow {
  readonly record: string;
  readonly settlement_id: string | null;
  readonly outcome: string | null;
}

/** A job read back from its rows (SQLite's and PostgreSQL's alike), checked as `create` checked it. */
export function modelJobFromRows(
  scope: Scope,
  row: ModelJobRow,
  items: readonly ModelJobItemRow[],
): ModelJob {
  return normalizeModelJob({
    scope,
    jobId: row.job_id,
    transportId: row.transport_id,
    state: row.state,
    items: items.map((r, i) =>
      modelJobItemFromText(
        r.record,
        { settlementId: r.settlement_id, outcome: r.outcome },
        `items[${i}]`,
      ),
    ),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    ...(row.submitting_at !== null ? { submittingAt: Number(row.submitting_at) } : {}),
    ...(row.batch_id !== null ? { batchId: row.batch_id } : {}),
  }).job;
}
