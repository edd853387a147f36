import { ValidationError } from "../errors.js";
import { type Scope, validateId } from "../scope.js";
import { canonicalJson, type JsonValue, snapshotOnce } from "../snapshot.js";
import { ConflictError, ErasedError } from "../stores/errors.js";
import type { ExecutionResultStore, ResultRecord, ResultReservation, ResultState, ReserveResult } from "../stores/results.js";
import { normalizeReservation } from "./normalize.js";
import { scopeKey, validateTime } from "./rules.js";

interface Row {
  readonly reservation: ResultReservation;
  readonly state: ResultState;
  readonly envelope?: JsonValue;
}

/** The record a reader sees at `now`: past `expiresAt` it is `expired` and never carries its envelope. */
export function resultView(
  r: { readonly resultId: string; readonly sessionId: string; readonly binding: string; readonly sensitivity: ResultRecord["sensitivity"]; readonly expiresAt: number },
  state: ResultState,
  envelope: JsonValue | undefined,
  now: number,
): ResultRecord {
  const live = state === "reserved" || state === "stored";
  const seen: ResultState = live && now >= r.expiresAt ? "expired" : state;
  return Object.freeze({
    resultId: r.resultId,
    sessionId: r.sessionId,
    binding: r.binding,
    state: seen,
    sensitivity: r.sensitivity,
    expiresAt: r.expiresAt,
    ...(seen === "stored" && envelope !== undefined ? { envelope } : {}),
  });
}

/** Why a put cannot land on an identity in `state` at `now`, as the contract's typed error. */
export function putRefusal(resultId: string, state: ResultState | undefined, expiresAt: number, now: number): Error | undefined {
  if (state === undefined) return new ConflictError("result_not_reserved", `result "${resultId}" was never reserved`);
  if (state === "erased" || state === "expired" || now >= expiresAt) return new ErasedError(`result "${resultId}"`);
  return undefined;
}

export function oversize(text: string, maxChars: number): ValidationError | undefined {
  if (text.length <= maxChars) return undefined;
  return new ValidationError("envelope", "max_chars", `the envelope's JSON text is ${text.length} characters, over maxChars ${maxChars}`);
}

/**
 * The reference result store: one instance is one namespace. Build two for step results and root
 * results; nothing is shared between instances. Erased and expired rows stay as tombstones.
 */
export class InMemoryExecutionResultStore implements ExecutionResultStore {
  readonly #rows = new Map<string, Row>();

  async reserve(reservation: ResultReservation): Promise<ReserveResult> {
    const r = normalizeReservation(reservation);
    const key = `${scopeKey(r.scope).key} ${r.resultId}`;
    const existing = this.#rows.get(key);
    if (existing) return Object.freeze({ status: "exists", record: this.#view(existing, r.createdAt) });
    const row: Row = { reservation: r, state: "reserved" };
    this.#rows.set(key, row);
    return Object.freeze({ status: "reserved", record: this.#view(row, r.createdAt) });
  }

  async put(scope: Scope, resultId: string, envelope: JsonValue, now: number): Promise<ResultRecord> {
    const key = `${scopeKey(scope).key} ${validateId("resultId", resultId)}`;
    const at = validateTime("now", now);
    const copy = snapshotOnce(envelope);
    const row = this.#rows.get(key);
    const refusal = putRefusal(resultId, row?.state, row?.reservation.expiresAt ?? 0, at);
    if (refusal || !row) throw refusal;
    if (row.state === "stored") {
      // Equality is of the canonical texts, made only here, where a second put must be compared.
      if (canonicalJson(row.envelope as JsonValue) === canonicalJson(copy)) return this.#view(row, at);
      throw new ConflictError("result_conflict", `result "${resultId}" was stored with a different envelope`);
    }
    // The canonical text only orders keys differently from the plain JSON text: the same length.
    const tooBig = oversize(JSON.stringify(copy), row.reservation.maxChars);
    if (tooBig) throw tooBig;
    const next: Row = { ...row, state: "stored", envelope: copy };
    this.#rows.set(key, next);
    return this.#view(next, at);
  }

  async get(scope: Scope, resultId: string, now: number): Promise<ResultRecord | undefined> {
    const key = `${scopeKey(scope).key} ${validateId("resultId", resultId)}`;
    const at = validateTime("now", now);
    const row = this.#rows.get(key);
    return row ? this.#view(row, at) : undefined;
  }

  async eraseSession(scope: Scope, sessionId: string): Promise<number> {
    const prefix = `${scopeKey(scope).key} `;
    const session = validateId("sessionId", sessionId);
    let count = 0;
    for (const [key, row] of this.#rows) {
      if (!key.startsWith(prefix) || row.reservation.sessionId !== session || row.state === "erased") continue;
      this.#rows.set(key, { reservation: row.reservation, state: "erased" });
      count++;
    }
    return count;
  }

  async purgeExpired(now: number): Promise<number> {
    const at = validateTime("now", now);
    let count = 0;
    for (const [key, row] of this.#rows) {
      if ((row.state !== "reserved" && row.state !== "stored") || row.reservation.expiresAt > at) continue;
      this.#rows.set(key, { reservation: row.reservation, state: "expired" });
      count++;
    }
    return count;
  }

  #view(row: Row, now: number): ResultRecord {
    return resultView(row.reservation, row.state, row.envelope, now);
  }
}
