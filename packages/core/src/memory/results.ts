import { type Scope, validateId } from "../scope.js";
import { canonicalJson, type JsonValue, snapshotOnce } from "../snapshot.js";
import { ConflictError } from "../stores/errors.js";
import type {
  ExecutionResultStore,
  ResultRecord,
  ResultReservation,
  ResultState,
  ReserveResult,
} from "../stores/results.js";
import { normalizeFenceOpts, normalizeReservation } from "../stores/normalize.js";
import { currentAdmission, type InMemoryAdmissionStore, scopeFenced } from "./admissions.js";
import { scopeKey, validateTime } from "../stores/rules.js";
import { fenceRefusal, oversize, putRefusal, resultView } from "../stores/transitions.js";
import { type SessionMarker, sessionMarker } from "../stores/erasure.js";
import { covers, ERASE, type Erasable, type EraseTarget, MEMORY_STATE, markOf } from "./erase.js";

interface Row {
  readonly reservation: ResultReservation;
  readonly state: ResultState;
  readonly envelope?: JsonValue;
}

/**
 * The reference result store: one instance is one namespace. Build two for step results and root
 * results; nothing is shared between instances. Erased and expired rows stay as tombstones.
 */
export class InMemoryExecutionResultStore implements ExecutionResultStore, Erasable {
  readonly #rows = new Map<string, Row>();
  readonly #admissions: InMemoryAdmissionStore | undefined;

  /** `admissions` fences a `put` that names an admission (a root's final result). */
  readonly #marker: SessionMarker;

  constructor(
    links: { readonly admissions?: InMemoryAdmissionStore; readonly marker?: SessionMarker } = {},
  ) {
    this.#marker = links.marker ?? sessionMarker();
    this.#admissions = links.admissions;
  }

  async reserve(reservation: ResultReservation): Promise<ReserveResult> {
    const r = normalizeReservation(reservation);
    const key = `${scopeKey(r.scope).key} ${r.resultId}`;
    const existing = this.#rows.get(key);
    if (existing)
      return Object.freeze({ status: "exists", record: this.#view(existing, r.createdAt) });
    const row: Row = { reservation: r, state: "reserved" };
    this.#rows.set(key, row);
    return Object.freeze({ status: "reserved", record: this.#view(row, r.createdAt) });
  }

  async put(
    scope: Scope,
    resultId: string,
    envelope: JsonValue,
    now: number,
    opts?: { readonly admissionId?: string },
  ): Promise<ResultRecord> {
    const { key: scopeText } = scopeKey(scope);
    const key = `${scopeText} ${validateId("resultId", resultId)}`;
    const at = validateTime("now", now);
    const o = normalizeFenceOpts(opts);
    if (o.admissionId !== undefined && !this.#admissions)
      throw new TypeError(
        "this result store was built without an admission store to fence puts on",
      );
    const copy = snapshotOnce(envelope);
    // From here on everything is synchronous: the fence check and the write are one step.
    const row = this.#rows.get(key);
    if (o.admissionId !== undefined && this.#admissions && row) {
      const refused = fenceRefusal(
        currentAdmission(this.#admissions, scopeText, o.admissionId),
        row.reservation.sessionId,
        at,
        scopeFenced(this.#admissions, scopeText),
      );
      if (refused) throw refused;
    }
    const refusal = putRefusal(resultId, row?.state, row?.reservation.expiresAt ?? 0, at);
    if (refusal || !row) throw refusal;
    if (row.state === "stored") {
      // Equality is of the canonical texts, made only here, where a second put must be compared.
      if (canonicalJson(row.envelope as JsonValue) === canonicalJson(copy))
        return this.#view(row, at);
      throw new ConflictError(
        "result_conflict",
        `result "${resultId}" was stored with a different envelope`,
      );
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
    const { scope: s, key } = scopeKey(scope);
    const id = validateId("sessionId", sessionId);
    return this.#erase({
      scope: s,
      key,
      session: { id, mark: this.#marker(s, id), audit: id },
      marker: this.#marker,
    });
  }

  [ERASE](target: EraseTarget): number {
    this.#erase(target);
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return this.#rows;
  }

  /** Tombstones the target's results: the envelope dropped, the session id replaced by its mark. */
  #erase(target: EraseTarget): number {
    let count = 0;
    for (const [key, row] of this.#rows) {
      if (
        !key.startsWith(`${target.key} `) ||
        row.state === "erased" ||
        !covers(target, target.key, row.reservation.sessionId)
      )
        continue;
      const reservation = Object.freeze({
        ...row.reservation,
        sessionId: markOf(target, row.reservation.sessionId),
      });
      this.#rows.set(key, { reservation, state: "erased" });
      count++;
    }
    return count;
  }

  async purgeExpired(now: number): Promise<number> {
    const at = validateTime("now", now);
    let count = 0;
    for (const [key, row] of this.#rows) {
      if ((row.state !== "reserved" && row.state !== "stored") || row.reservation.expiresAt > at)
        continue;
      this.#rows.set(key, { reservation: row.reservation, state: "expired" });
      count++;
    }
    return count;
  }

  #view(row: Row, now: number): ResultRecord {
    return resultView(row.reservation, row.state, row.envelope, now);
  }
}
