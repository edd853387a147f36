import { BUDGET_CAP_NAMES, CALL_KINDS, type CostReceipt } from "../caps.js";
import { ValidationError } from "../errors.js";
import type { Msg } from "../messages.js";
import { SENSITIVITIES } from "../routing.js";
import { type Scope, validateId } from "../scope.js";
import { canonicalJson, type JsonValue, snapshot, snapshotOnce } from "../snapshot.js";
import type { AdmissionKind } from "./admissions.js";
import type { ClaimOptions, ClaimReservation, ExecutionClaim, Fence } from "./execution.js";
import type { ResultReservation } from "./results.js";
import type { SettlementInput } from "./settlements.js";
import {
  type NotDispatchedCause,
  USAGE_COUNTERS,
  type Usage,
  type UsageEvidence,
  usageProblem,
} from "../usage.js";
import {
  closedObject,
  scopeKey,
  validateCount,
  validateDay,
  validateName,
  validateOneOf,
  validateTime,
} from "./rules.js";

/** The closed records the stores accept, normalized once for every implementation. */
export { normalizeAuditEvent, normalizeAuditQuery, TRAILS } from "./normalize-audit.js";

const BLOCK_TYPES = [
  "text",
  "media",
  "tool_call",
  "tool_result",
  "provider_tool_call",
  "provider_tool_result",
  "reasoning",
] as const;
const SERVICE_TIERS = ["standard", "priority", "flex", "batch"] as const;
const CAP_NAMES = BUDGET_CAP_NAMES;
const USAGE_FIELDS = [...USAGE_COUNTERS, "serviceTier"];

/** A batch of 1+ messages, snapshotted (plain, bounded JSON) and checked for shape. */
export function normalizeMessages(messages: unknown): readonly Msg[] {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new ValidationError("messages", "non_empty", "messages must be a non-empty array");
  }
  const copy = snapshotOnce(messages) as readonly unknown[];
  for (const [i, msg] of copy.entries()) checkMsg(msg, `messages[${i}]`);
  return copy as readonly Msg[];
}

function checkMsg(value: unknown, path: string): void {
  const msg = closedObject(path, value, ["role", "blocks", "meta"]);
  validateOneOf(`${path}.role`, msg.role, ["user", "assistant"]);
  if (!Array.isArray(msg.blocks))
    throw new ValidationError(`${path}.blocks`, "array", "blocks must be an array");
  msg.blocks.forEach((block: unknown, j: number) => {
    if (block === null || typeof block !== "object" || Array.isArray(block)) {
      throw new ValidationError(`${path}.blocks[${j}]`, "object", "a block must be an object");
    }
    validateOneOf(`${path}.blocks[${j}].type`, (block as { type?: unknown }).type, BLOCK_TYPES);
  });
  if (msg.meta === undefined) return;
  const meta = closedObject(`${path}.meta`, msg.meta, ["turn", "event", "rotation", "at"]);
  if (meta.turn !== undefined) validateId(`${path}.meta.turn`, meta.turn);
  if (meta.at !== undefined) validateTime(`${path}.meta.at`, meta.at);
  if (meta.event !== undefined) {
    const event = closedObject(`${path}.meta.event`, meta.event, ["id", "kind"]);
    validateId(`${path}.meta.event.id`, event.id);
    validateOneOf(`${path}.meta.event.kind`, event.kind, ["input", "message", "undelivered"]);
  }
  if (meta.rotation !== undefined) {
    const rotation = closedObject(`${path}.meta.rotation`, meta.rotation, ["replaces"]);
    validateCount(`${path}.meta.rotation.replaces`, rotation.replaces);
  }
}

/** The event ids a batch carries, in batch order (a repeat inside the batch is the store's to refuse). */
export function eventIdsOf(messages: readonly Msg[]): readonly string[] {
  const ids: string[] = [];
  for (const msg of messages) {
    const id = msg.meta?.event?.id;
    if (id !== undefined) ids.push(id);
  }
  return ids;
}

/** Index of the last rotation marker, or -1 when there is none. */
export function lastRotation(messages: readonly Msg[]): number {
  for (let i = messages.length - 1; i >= 0; i--)
    if (messages[i]?.meta?.rotation !== undefined) return i;
  return -1;
}

/** Where a session's view starts: its last rotation marker, or 0. */
export function viewOffset(messages: readonly Msg[]): number {
  return Math.max(0, lastRotation(messages));
}

/** The fields of a claim besides its scope, in the order a retry is compared. */
export const CLAIM_FIELDS = [
  "operationId",
  "sessionId",
  "rootKey",
  "turnId",
  "kind",
  "clientId",
  "model",
  "priceVersion",
  "policyVersion",
  "createdAt",
  "deadlineAt",
] as const;
const CLAIM_KEYS: readonly string[] = ["scope", ...CLAIM_FIELDS];

export function normalizeClaim(claim: unknown): ExecutionClaim {
  const c = closedObject("claim", claim, CLAIM_KEYS);
  const out: ExecutionClaim = {
    scope: scopeKey(c.scope).scope,
    operationId: validateId("operationId", c.operationId),
    sessionId: validateId("sessionId", c.sessionId),
    rootKey: validateId("rootKey", c.rootKey),
    turnId: validateId("turnId", c.turnId),
    kind: validateOneOf("kind", c.kind, CALL_KINDS),
    clientId: validateName("clientId", c.clientId),
    model: validateName("model", c.model),
    priceVersion: validateName("priceVersion", c.priceVersion),
    policyVersion: validateName("policyVersion", c.policyVersion),
    createdAt: validateTime("createdAt", c.createdAt),
    deadlineAt: validateTime("deadlineAt", c.deadlineAt),
  };
  return Object.freeze(out);
}

/** Fences `normalizeFence` returned (frozen, checked): handed back, they are returned as they are. */
const normalizedFences = new WeakSet<Fence>();

export function normalizeFence(fence: unknown): Fence {
  if (typeof fence === "object" && fence !== null && normalizedFences.has(fence as Fence))
    return fence as Fence;
  const f = closedObject("fence", fence, ["scope", "operationId", "token"]);
  const out: Fence = Object.freeze({
    scope: scopeKey(f.scope).scope,
    operationId: validateId("fence.operationId", f.operationId),
    token: validateCount("fence.token", f.token, 1),
  });
  normalizedFences.add(out);
  return out;
}

export function normalizeUsage(usage: unknown, path = "usage"): Usage {
  const u = closedObject(path, usage, USAGE_FIELDS);
  if (u.serviceTier !== undefined)
    validateOneOf(`${path}.serviceTier`, u.serviceTier, SERVICE_TIERS);
  const problem = usageProblem(u as unknown as Usage);
  if (problem !== undefined) throw new ValidationError(path, "usage", `${path}: ${problem}`);
  return snapshot(u) as unknown as Usage;
}

/** Evidence a `receive` may record: known, unpriced or unknown (never not_dispatched, which ends a prepared record). */
export function normalizeReceivedEvidence(evidence: unknown): UsageEvidence {
  const e = closedObject("evidence", evidence, ["status", "usage", "reason", "upstream"]);
  const status = validateOneOf("evidence.status", e.status, ["known", "unpriced", "unknown"]);
  if (status === "unknown") {
    closedObject("evidence", evidence, ["status"]);
    return Object.freeze({ status });
  }
  const usage = normalizeUsage(e.usage, "evidence.usage");
  const upstream =
    e.upstream === undefined ? {} : { upstream: validateName("evidence.upstream", e.upstream) };
  if (status === "known") {
    closedObject("evidence", evidence, ["status", "usage", "upstream"]);
    return Object.freeze({ status, usage, ...upstream });
  }
  if (typeof e.reason !== "string" || e.reason.length === 0 || e.reason.length > 500) {
    throw new ValidationError(
      "evidence.reason",
      "reason",
      "an unpriced evidence needs a reason of 1-500 characters",
    );
  }
  return Object.freeze({ status, usage, reason: e.reason, ...upstream });
}

export function normalizeCancelCause(cause: unknown): Exclude<NotDispatchedCause, "expired"> {
  if (cause === "expired")
    throw new ValidationError(
      "cause",
      "expired_is_the_sweeps",
      "only the expiry sweep records the cause expired",
    );
  return validateOneOf("cause", cause, [
    "aborted",
    "audit",
    "store",
    "input",
    "invalid",
    "scope_fenced",
  ]);
}

export function normalizeReservation(reservation: unknown): ResultReservation {
  const r = closedObject("reservation", reservation, [
    "scope",
    "resultId",
    "sessionId",
    "binding",
    "sensitivity",
    "maxChars",
    "expiresAt",
    "createdAt",
  ]);
  const out: ResultReservation = {
    scope: scopeKey(r.scope).scope,
    resultId: validateId("resultId", r.resultId),
    sessionId: validateId("sessionId", r.sessionId),
    binding: validateId("binding", r.binding),
    sensitivity: validateOneOf("sensitivity", r.sensitivity, SENSITIVITIES),
    maxChars: validateCount("maxChars", r.maxChars, 1),
    expiresAt: validateTime("expiresAt", r.expiresAt),
    createdAt: validateTime("createdAt", r.createdAt),
  };
  if (out.expiresAt <= out.createdAt)
    throw new ValidationError("expiresAt", "after_created", "expiresAt must be after createdAt");
  return Object.freeze(out);
}

/** A result envelope: snapshotted JSON and its canonical text (what `maxChars` measures and equality compares). */
export function normalizeEnvelope(envelope: unknown): {
  readonly envelope: JsonValue;
  readonly text: string;
} {
  const copy = snapshotOnce(envelope);
  return { envelope: copy, text: canonicalJson(copy) };
}

export function normalizeSettlement(input: unknown): SettlementInput {
  const s = closedObject("settlement", input, [
    "scope",
    "sessionId",
    "day",
    "receipt",
    "at",
    "consumers",
  ]);
  if (!Array.isArray(s.consumers) || s.consumers.length > 16) {
    throw new ValidationError(
      "consumers",
      "consumers",
      "consumers must be an array of at most 16 ids",
    );
  }
  const consumers = s.consumers.map((c: unknown, i: number) => validateId(`consumers[${i}]`, c));
  if (new Set(consumers).size !== consumers.length)
    throw new ValidationError("consumers", "unique", "consumers must be distinct");
  const out: SettlementInput = {
    scope: scopeKey(s.scope).scope,
    sessionId: validateId("sessionId", s.sessionId),
    day: validateDay("day", s.day),
    receipt: normalizeCostReceipt(s.receipt),
    at: validateTime("at", s.at),
    consumers: Object.freeze(consumers),
  };
  return Object.freeze(out);
}

/** A cost receipt, closed and checked (a settlement's, or one a caller stored and reads back). */
export function normalizeCostReceipt(receipt: unknown): CostReceipt {
  const r = closedObject("receipt", receipt, [
    "settlementId",
    "operationId",
    "turnId",
    "kind",
    "clientId",
    "model",
    "serviceTier",
    "usage",
    "usdMicros",
    "priceVersion",
    "capsCrossed",
  ]);
  if (!Array.isArray(r.capsCrossed))
    throw new ValidationError("receipt.capsCrossed", "array", "capsCrossed must be an array");
  const caps = r.capsCrossed.map((c: unknown, i: number) =>
    validateOneOf(`receipt.capsCrossed[${i}]`, c, CAP_NAMES),
  );
  if (new Set(caps).size !== caps.length)
    throw new ValidationError("receipt.capsCrossed", "unique", "capsCrossed must be distinct");
  const out: CostReceipt = {
    settlementId: validateId("receipt.settlementId", r.settlementId),
    operationId: validateId("receipt.operationId", r.operationId),
    turnId: validateId("receipt.turnId", r.turnId),
    kind: validateOneOf("receipt.kind", r.kind, CALL_KINDS),
    clientId: validateName("receipt.clientId", r.clientId),
    model: validateName("receipt.model", r.model),
    serviceTier: validateOneOf("receipt.serviceTier", r.serviceTier, SERVICE_TIERS),
    usage: normalizeUsage(r.usage, "receipt.usage"),
    usdMicros: validateCount("receipt.usdMicros", r.usdMicros),
    priceVersion: validateName("receipt.priceVersion", r.priceVersion),
    capsCrossed: Object.freeze(caps),
  };
  return Object.freeze(out);
}

const ADMISSION_KINDS: readonly AdmissionKind[] = ["turn", "events"];

export interface AdmitInput {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly kind: AdmissionKind;
  readonly admissionId: string;
  readonly now: number;
  readonly deadlineAt: number;
}

export function normalizeAdmit(input: unknown): AdmitInput {
  const a = closedObject("admit", input, [
    "scope",
    "sessionId",
    "rootKey",
    "kind",
    "admissionId",
    "now",
    "deadlineAt",
  ]);
  const out: AdmitInput = {
    scope: scopeKey(a.scope).scope,
    sessionId: validateId("sessionId", a.sessionId),
    rootKey: validateId("rootKey", a.rootKey),
    kind: validateOneOf("kind", a.kind, ADMISSION_KINDS),
    admissionId: validateId("admissionId", a.admissionId),
    now: validateTime("now", a.now),
    deadlineAt: validateTime("deadlineAt", a.deadlineAt),
  };
  if (out.deadlineAt <= out.now)
    throw new ValidationError("deadlineAt", "after_now", "deadlineAt must be after now");
  return Object.freeze(out);
}

export interface ReleaseExpiredInput {
  readonly scope?: Scope;
  readonly sessionId?: string;
  readonly kind?: AdmissionKind;
  readonly now: number;
  readonly graceMs: number;
}

/** `releaseExpired`'s input: a session narrows it only inside a scope (a session id alone names no session). */
export function normalizeReleaseExpired(input: unknown): ReleaseExpiredInput {
  const r = closedObject("releaseExpired", input, ["scope", "sessionId", "kind", "now", "graceMs"]);
  const now = validateTime("now", r.now);
  const graceMs = validateCount("graceMs", r.graceMs);
  if (r.sessionId !== undefined && r.scope === undefined)
    throw new ValidationError(
      "sessionId",
      "needs_scope",
      "releaseExpired takes a sessionId only with its scope",
    );
  return {
    ...(r.scope === undefined ? {} : { scope: scopeKey(r.scope).scope }),
    ...(r.sessionId === undefined ? {} : { sessionId: validateId("sessionId", r.sessionId) }),
    ...(r.kind === undefined ? {} : { kind: validateOneOf("kind", r.kind, ADMISSION_KINDS) }),
    now,
    graceMs,
  };
}

export function normalizeReconcile(input: unknown): {
  readonly scope?: Scope;
  readonly now: number;
} {
  const r = closedObject("reconcileExpired", input, ["scope", "now"]);
  const now = validateTime("now", r.now);
  return r.scope === undefined ? { now } : { scope: scopeKey(r.scope).scope, now };
}

/** The claim's options, validated and frozen: the admission that fences it and the reservation it holds. */
export function normalizeClaimOptions(opts: unknown): ClaimOptions {
  if (opts === undefined) return Object.freeze({});
  const o = closedObject("opts", opts, ["admissionId", "reservation"]);
  const out: { admissionId?: string; reservation?: ClaimReservation } = {};
  if (o.admissionId !== undefined) out.admissionId = validateId("opts.admissionId", o.admissionId);
  if (o.reservation !== undefined) {
    const r = closedObject("opts.reservation", o.reservation, [
      "day",
      "usdMicros",
      "limits",
      "expiresAt",
    ]);
    const l = closedObject("opts.reservation.limits", r.limits, [
      "perSessionUsd",
      "perTenantDayUsd",
    ]);
    const limits: { perSessionUsd?: number; perTenantDayUsd?: number } = {};
    if (l.perSessionUsd !== undefined)
      limits.perSessionUsd = validateCount(
        "opts.reservation.limits.perSessionUsd",
        l.perSessionUsd,
      );
    if (l.perTenantDayUsd !== undefined)
      limits.perTenantDayUsd = validateCount(
        "opts.reservation.limits.perTenantDayUsd",
        l.perTenantDayUsd,
      );
    out.reservation = Object.freeze({
      day: validateDay("opts.reservation.day", r.day),
      usdMicros: validateCount("opts.reservation.usdMicros", r.usdMicros),
      limits: Object.freeze(limits),
      expiresAt: validateTime("opts.reservation.expiresAt", r.expiresAt),
    });
  }
  return Object.freeze(out);
}

/** A write's admission fence (`put`'s options), validated. */
export function normalizeFenceOpts(opts: unknown): { readonly admissionId?: string } {
  if (opts === undefined) return Object.freeze({});
  const o = closedObject("opts", opts, ["admissionId"]);
  return Object.freeze(
    o.admissionId === undefined
      ? {}
      : { admissionId: validateId("opts.admissionId", o.admissionId) },
  );
}
