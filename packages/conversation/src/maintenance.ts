import {
  type AdmissionKind,
  type ExecutionRecord,
  normalizeScope,
  type Scope,
  validateId,
} from "@alma-harness/core";
import { closedObject } from "@alma-harness/core/stores";
import { EXPIRED_RELEASE_GRACE_MS, type ResolvedConfig } from "./config.js";
import { persistedOf, report } from "./uncertain.js";

/** One admission maintenance released, fifteen minutes past its deadline. */
export interface ExpiredRelease {
  readonly scope: Scope;
  readonly sessionId: string;
  /** The turn's root key, or an event batch's key (`ev_…`). */
  readonly rootKey: string;
  readonly kind: AdmissionKind;
  readonly deadlineAt: number;
}

/**
 * Frees every admission fifteen minutes past its deadline (turns and event batches) and returns
 * them (`.length` is the count). Each turn among them is reported to `onUncertainTurn` with cause
 * `expired`, `released: true` and whether its messages are in the session: a turn whose process
 * died, or whose own release failed, is told to the host once, when it is freed.
 */
export async function releaseExpired(
  config: ResolvedConfig,
  only: { readonly scope?: Scope; readonly sessionId?: string; readonly kind?: AdmissionKind },
): Promise<readonly ExpiredRelease[]> {
  // The one expiry rule (deadline + grace at or before now) is the store's, narrowed here.
  const released = await config.stores.admissions.releaseExpired({
    ...only,
    now: config.clock.now(),
    graceMs: EXPIRED_RELEASE_GRACE_MS,
  });
  const out: ExpiredRelease[] = [];
  for (const a of released) {
    out.push(
      Object.freeze({
        scope: a.scope,
        sessionId: a.sessionId,
        rootKey: a.rootKey,
        kind: a.kind,
        deadlineAt: a.deadlineAt,
      }),
    );
    if (a.kind !== "turn") continue;
    const persisted = await persistedOf(config, a.scope, a.sessionId, a.rootKey);
    report(config, {
      scope: a.scope,
      sessionId: a.sessionId,
      rootKey: a.rootKey,
      cause: "expired",
      persisted,
      released: true,
    });
  }
  return Object.freeze(out);
}

/**
 * The session's expired event admission (spec: fenced-event-append): a `recordEvents` batch whose
 * finish failed holds the session to its deadline; fifteen minutes past it, this releases it,
 * active or uncertain. It never releases a turn's admission (a turn's expiry is `releaseExpired`'s,
 * reported to `onUncertainTurn`). Bad input is refused before any I/O (`InvalidScopeError`,
 * `InvalidIdError`, `ValidationError` for another field).
 */
export async function releaseExpiredEvents(
  config: ResolvedConfig,
  request: unknown,
): Promise<readonly ExpiredRelease[]> {
  const r = closedObject("releaseExpiredEvents", request, ["scope", "sessionId"]);
  const scope = normalizeScope(r.scope);
  const sessionId = validateId("sessionId", r.sessionId);
  return releaseExpired(config, { scope, sessionId, kind: "events" });
}

export interface UnresolvedPage {
  readonly items: readonly ExecutionRecord[];
  readonly nextCursor?: string;
}

/**
 * The journal records of a scope whose turn has no stored final result, in the journal's order
 * (createdAt, operationId), in every state: a call that completed inside a turn that crashed or
 * ended uncertain is listed with the rest of its turn. A page is one page of the journal filtered,
 * so it may hold fewer items than `limit` while `nextCursor` says more remain.
 */
export async function listUnresolved(
  config: ResolvedConfig,
  scope: Scope,
  opts: { readonly cursor?: string; readonly limit?: number } = {},
): Promise<UnresolvedPage> {
  const page = await config.stores.journal.list(scope, { ...opts, resolved: true });
  const settled = new Map<string, boolean>();
  const items: ExecutionRecord[] = [];
  for (const record of page.items) {
    let stored = settled.get(record.rootKey);
    if (stored === undefined) {
      stored =
        (await config.stores.rootResults.get(scope, record.rootKey, config.clock.now()))?.state ===
        "stored";
      settled.set(record.rootKey, stored);
    }
    if (!stored) items.push(record);
  }
  return Object.freeze({
    items: Object.freeze(items),
    ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
  });
}
