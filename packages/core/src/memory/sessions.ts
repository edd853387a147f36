import type { Msg } from "../messages.js";
import { fenceRefusal } from "../stores/transitions.js";
import { type Scope, validateId } from "../scope.js";
import { DuplicateEventError, FenceError } from "../stores/errors.js";
import type { AppendOpts, SessionStore, SessionSummary, SessionView } from "../stores/sessions.js";
import { currentAdmission, type InMemoryAdmissionStore, scopeFenced } from "./admissions.js";
import { covers, ERASE, type Erasable, type EraseTarget, MEMORY_STATE, markOf } from "./erase.js";
import { type SessionMarker, sessionMarker } from "../stores/erasure.js";
import { eventIdsOf, lastRotation, normalizeMessages } from "../stores/normalize.js";
import {
  closedObject,
  decodeCursor,
  PAGE,
  pageLimit,
  pageOf,
  scopeKey,
  validateTime,
} from "../stores/rules.js";

interface Log {
  /** Append-only; every message is a frozen snapshot, stored once and shared with every reader. */
  readonly messages: Msg[];
  /** Where the view starts: the last rotation marker, or 0 (kept as batches land, never rescanned). */
  offset: number;
  /** The frozen view `load` returns, made on the first load after an append and shared until the next. */
  view: readonly Msg[] | undefined;
  readonly eventIds: Set<string>;
  updatedAt: number;
  erased: boolean;
}

const EMPTY: readonly Msg[] = Object.freeze([]);

/**
 * The reference session store. Appends are fenced on the admission store it was built with: the
 * admission is read and the batch written in one synchronous step, so no other call can end the
 * admission in between. An append writes only while the admission is `active`, names this scope
 * and session, and `now` is before its deadline.
 */
export class InMemorySessionStore implements SessionStore, Erasable {
  readonly #admissions: InMemoryAdmissionStore;
  readonly #logs = new Map<string, Log>();
  /** `scope mark` of every erased session: a tombstone that holds no session id (see `erasedSessionMark`). */
  readonly #erased = new Set<string>();

  readonly #marker: SessionMarker;

  constructor(admissions: InMemoryAdmissionStore, marker: SessionMarker = sessionMarker()) {
    this.#marker = marker;
    this.#admissions = admissions;
  }

  async load(scope: Scope, sessionId: string): Promise<SessionView> {
    const log = this.#logs.get(sessionKey(scope, sessionId));
    if (!log || log.erased)
      return Object.freeze({
        messages: EMPTY,
        revision: 0,
        offset: 0,
        erased: log?.erased ?? this.#isErased(scope, sessionId),
      });
    log.view ??= Object.freeze(log.messages.slice(log.offset));
    return Object.freeze({
      messages: log.view,
      revision: log.messages.length,
      offset: log.offset,
      erased: false,
    });
  }

  async append(
    scope: Scope,
    sessionId: string,
    messages: readonly Msg[],
    opts: AppendOpts & { readonly now: number },
  ): Promise<{ readonly revision: number }> {
    const key = sessionKey(scope, sessionId);
    const o = closedObject("opts", opts, ["admissionId", "now"]);
    const admissionId = validateId("admissionId", o.admissionId);
    const now = validateTime("now", o.now);
    const batch = normalizeMessages(messages);
    const ids = eventIdsOf(batch);
    // From here on everything is synchronous: the fence check and the write are one step.
    const scopeText = scopeKey(scope).key;
    const refused = fenceRefusal(
      currentAdmission(this.#admissions, scopeText, admissionId),
      sessionId,
      now,
      scopeFenced(this.#admissions, scopeText),
    );
    if (refused) throw refused;
    const log = this.#logs.get(key) ?? emptyLog(now, this.#isErased(scope, sessionId));
    if (log.erased) throw new FenceError("the session was erased");
    const seen = new Set<string>();
    for (const id of ids) {
      if (log.eventIds.has(id) || seen.has(id)) throw new DuplicateEventError(id);
      seen.add(id);
    }
    const marker = lastRotation(batch);
    if (marker >= 0) log.offset = log.messages.length + marker;
    for (const msg of batch) log.messages.push(msg);
    log.view = undefined;
    for (const id of ids) log.eventIds.add(id);
    log.updatedAt = now;
    this.#logs.set(key, log);
    return Object.freeze({ revision: log.messages.length });
  }

  async findEvents(
    scope: Scope,
    sessionId: string,
    eventIds: readonly string[],
  ): Promise<readonly Msg[]> {
    const key = sessionKey(scope, sessionId);
    if (!Array.isArray(eventIds)) throw new TypeError("eventIds must be an array");
    const wanted = new Set(eventIds.map((id, i) => validateId(`eventIds[${i}]`, id)));
    const log = this.#logs.get(key);
    if (!log || log.erased) return EMPTY;
    return Object.freeze(
      log.messages.filter((m) => m.meta?.event !== undefined && wanted.has(m.meta.event.id)),
    );
  }

  async list(
    scope: Scope,
    opts: { readonly cursor?: string; readonly limit?: number } = {},
  ): Promise<{ readonly items: readonly SessionSummary[]; readonly nextCursor?: string }> {
    const prefix = `${scopeKey(scope).key} `;
    const o = closedObject("opts", opts, ["cursor", "limit"]);
    const limit = pageLimit(o.limit, PAGE.sessions.def, PAGE.sessions.max);
    const after = decodeCursor(o.cursor, ["string"]);
    const items: SessionSummary[] = [];
    for (const [key, log] of this.#logs) {
      if (!key.startsWith(prefix) || log.erased) continue;
      items.push(
        Object.freeze({
          sessionId: key.slice(prefix.length),
          revision: log.messages.length,
          updatedAt: log.updatedAt,
        }),
      );
    }
    items.sort((a, b) => (a.sessionId < b.sessionId ? -1 : 1));
    return Object.freeze(pageOf(items, (s) => [s.sessionId], after, limit));
  }

  async erase(scope: Scope, sessionId: string): Promise<void> {
    const key = sessionKey(scope, sessionId);
    const { scope: s, key: scopeText } = scopeKey(scope);
    this[ERASE]({
      scope: s,
      key: scopeText,
      session: {
        id: key.slice(scopeText.length + 1),
        mark: this.#marker(s, sessionId),
        audit: sessionId,
      },
      marker: this.#marker,
    });
  }

  /** Drops the target's logs and keeps a tombstone per session under its mark. */
  [ERASE](target: EraseTarget): number {
    const prefix = `${target.key} `;
    for (const key of [...this.#logs.keys()]) {
      const id = key.slice(prefix.length);
      if (!key.startsWith(prefix) || !covers(target, target.key, id)) continue;
      this.#logs.delete(key);
      this.#erased.add(`${prefix}${markOf(target, id)}`);
    }
    if (target.session) this.#erased.add(`${prefix}${target.session.mark}`);
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return [this.#logs, this.#erased];
  }

  /** Whether the session has a tombstone (the mark is hashed only once some session was erased). */
  #isErased(scope: Scope, sessionId: string): boolean {
    return (
      this.#erased.size > 0 &&
      this.#erased.has(`${scopeKey(scope).key} ${this.#marker(scope, sessionId)}`)
    );
  }
}

function emptyLog(updatedAt: number, erased: boolean): Log {
  return {
    messages: [],
    offset: 0,
    view: undefined,
    eventIds: new Set<string>(),
    updatedAt,
    erased,
  };
}

function sessionKey(scope: Scope, sessionId: string): string {
  return `${scopeKey(scope).key} ${validateId("sessionId", sessionId)}`;
}
