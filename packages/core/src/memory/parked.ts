import type { Scope } from "../scope.js";
import { validateId } from "../scope.js";
import type { Admission } from "../stores/admissions.js";
import { ConflictError, FenceError, ScopeFencedError } from "../stores/errors.js";
import type {
  CheckpointInput,
  ClaimResumeInput,
  ClaimResumeResult,
  DecideInput,
  DecideResult,
  ParkedTurn,
  ParkedTurnStore,
  ParkedTurnSummary,
  ParkInput,
} from "../stores/parked.js";
import {
  claimableFrom,
  claimedTurn,
  decideOn,
  isDue,
  mergedOutputs,
  normalizeCheckpoint,
  normalizeClaimResume,
  normalizeDecide,
  normalizeDue,
  normalizePark,
  normalizeParkedList,
  notClaimable,
  parkedTurnOf,
  parkedRecord,
  checkpointRecord,
  parkRefusal,
  summaryOf,
  validateAskId,
} from "../stores/parked-rules.js";
import { scopeKey } from "../stores/rules.js";
import {
  currentAdmission,
  type InMemoryAdmissionStore,
  scopeFenced,
  writeAdmission,
} from "./admissions.js";
import { covers, ERASE, type Erasable, type EraseTarget, MEMORY_STATE } from "./erase.js";

/**
 * The reference parked-turn store, beside the admission store whose rows it moves: every method
 * validates first and then runs synchronously to its end, so a park, a decision and a claim are
 * each one atomic step (of concurrent claims exactly one wins).
 */
export class InMemoryParkedTurnStore implements ParkedTurnStore, Erasable {
  /** `scopeKey rootKey` → the turn. */
  readonly #turns = new Map<string, ParkedTurn>();
  readonly #admissions: InMemoryAdmissionStore;

  constructor(admissions: InMemoryAdmissionStore) {
    this.#admissions = admissions;
  }

  async park(input: ParkInput): Promise<ParkedTurn> {
    const p = normalizePark(input);
    const admission = currentAdmission(this.#admissions, p.key, p.admissionId);
    const refused = parkRefusal(admission, p, scopeFenced(this.#admissions, p.key));
    if (refused || !admission) throw refused ?? new FenceError();
    const before = this.#turns.get(`${p.key} ${p.rootKey}`);
    const outputs = mergedOutputs(before?.outputs ?? [], p.outputs ?? []);
    const turn = parkedRecord(p, before?.admissionId === p.admissionId ? before.runs : 0, outputs);
    writeAdmission(this.#admissions, p.key, { ...admission, deadlineAt: p.expiresAt });
    this.#turns.set(`${p.key} ${p.rootKey}`, turn);
    return turn;
  }

  async checkpoint(input: CheckpointInput): Promise<ParkedTurnSummary> {
    const c = normalizeCheckpoint(input);
    const admission = currentAdmission(this.#admissions, c.key, c.admissionId);
    const refused = parkRefusal(admission, c, scopeFenced(this.#admissions, c.key));
    if (refused || !admission) throw refused ?? new FenceError();
    const before = this.#turns.get(`${c.key} ${c.rootKey}`);
    const turn = checkpointRecord(
      c,
      admission.deadlineAt,
      before?.admissionId === c.admissionId ? before.runs : 0,
      mergedOutputs(before?.outputs ?? [], c.outputs ?? []),
    );
    this.#turns.set(`${c.key} ${c.rootKey}`, turn);
    return summaryOf(turn);
  }

  async get(scope: Scope, rootKey: string): Promise<ParkedTurn | undefined> {
    const { key } = scopeKey(scope);
    return this.#turns.get(`${key} ${validateId("rootKey", rootKey)}`);
  }

  async decide(input: DecideInput): Promise<DecideResult> {
    const d = normalizeDecide(input);
    const found = this.#byAsk(d.key, d.askId);
    const { result, asks } = decideOn(found && summaryOf(found), d);
    if (found && asks)
      this.#turns.set(`${d.key} ${found.rootKey}`, parkedTurnOf({ ...found, asks }));
    return result;
  }

  async claim(input: ClaimResumeInput): Promise<ClaimResumeResult> {
    const c = normalizeClaimResume(input);
    const turn = this.#turns.get(`${c.key} ${c.rootKey}`);
    const holder = turn && currentAdmission(this.#admissions, c.key, turn.admissionId);
    const from = claimableFrom(turn, holder, c.now);
    if (!turn || !holder || !from) return notClaimable(turn);
    if (currentAdmission(this.#admissions, c.key, c.admissionId))
      throw new ConflictError("admission_exists", `admission "${c.admissionId}" already exists`);
    if (scopeFenced(this.#admissions, c.key)) throw new ScopeFencedError();
    const admission: Admission = Object.freeze({
      admissionId: c.admissionId,
      scope: turn.scope,
      sessionId: turn.sessionId,
      rootKey: turn.rootKey,
      kind: "turn",
      state: "active",
      createdAt: c.now,
      deadlineAt: c.deadlineAt,
    });
    const ended: Admission =
      from === "parked"
        ? { ...holder, state: "finished" }
        : { ...holder, state: "released", releaseReason: "expired" };
    writeAdmission(this.#admissions, c.key, ended);
    writeAdmission(this.#admissions, c.key, admission);
    const result = claimedTurn(turn, from, admission);
    this.#turns.set(`${c.key} ${c.rootKey}`, result.turn);
    return result;
  }

  async done(scope: Scope, rootKey: string, admissionId: string): Promise<boolean> {
    const { key } = scopeKey(scope);
    const rowKey = `${key} ${validateId("rootKey", rootKey)}`;
    const turn = this.#turns.get(rowKey);
    if (turn?.admissionId !== validateId("admissionId", admissionId)) return false;
    return this.#turns.delete(rowKey);
  }

  async due(input: Parameters<ParkedTurnStore["due"]>[0]): Promise<readonly ParkedTurnSummary[]> {
    const d = normalizeDue(input);
    const out: ParkedTurnSummary[] = [];
    for (const [rowKey, turn] of this.#turns) {
      const key = rowKey.slice(0, rowKey.indexOf(" "));
      if (d.only !== null && key !== d.only) continue;
      const holder = currentAdmission(this.#admissions, key, turn.admissionId);
      if (holder?.state === "active" && isDue(turn, holder.deadlineAt, d.now))
        out.push(summaryOf(turn));
    }
    return Object.freeze(out.sort(byExpiry).slice(0, d.limit));
  }

  async list(input: Parameters<ParkedTurnStore["list"]>[0]): Promise<readonly ParkedTurnSummary[]> {
    const l = normalizeParkedList(input);
    const out = [...this.#turns.values()].filter(
      (t) => t.scope.org === l.org && (l.uid === null || t.scope.uid === l.uid),
    );
    return Object.freeze(out.sort(byPark).slice(0, l.limit).map(summaryOf));
  }

  async find(askId: string): Promise<readonly ParkedTurnSummary[]> {
    const id = validateAskId(askId);
    const out = [...this.#turns.values()].filter((t) => t.asks.some((a) => a.askId === id));
    return Object.freeze(out.sort(byPark).map(summaryOf));
  }

  #byAsk(key: string, askId: string): ParkedTurn | undefined {
    for (const [rowKey, turn] of this.#turns)
      if (rowKey.startsWith(`${key} `) && turn.asks.some((a) => a.askId === askId)) return turn;
    return undefined;
  }

  [ERASE](target: EraseTarget): number {
    for (const [rowKey, turn] of this.#turns)
      if (covers(target, rowKey.slice(0, rowKey.indexOf(" ")), turn.sessionId))
        this.#turns.delete(rowKey);
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return [this.#turns];
  }
}

const byExpiry = (a: ParkedTurnSummary, b: ParkedTurnSummary) =>
  a.expiresAt - b.expiresAt || (a.rootKey < b.rootKey ? -1 : 1);
const byPark = (a: ParkedTurnSummary, b: ParkedTurnSummary) =>
  a.parkedAt - b.parkedAt || (a.rootKey < b.rootKey ? -1 : 1);
