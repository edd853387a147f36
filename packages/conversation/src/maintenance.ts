import type { AdmissionKind, ExecutionRecord, Scope } from "@alma-harness/core";
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
export async function releaseExpired(config: ResolvedConfig, scope?: Scope): Promise<readonly ExpiredRelease[]> {
  const released = await config.stores.admissions.releaseExpired({ ...(scope ? { scope } : {}), now: config.clock.now(), graceMs: EXPIRED_RELEASE_GRACE_MS });
  const out: ExpiredRelease[] = [];
  for (const a of released) {
    out.push(Object.freeze({ scope: a.scope, sessionId: a.sessionId, rootKey: a.rootKey, kind: a.kind, deadlineAt: a.deadlineAt }));
    if (a.kind !== "turn") continue;
    const persisted = await persistedOf(config, a.scope, a.sessionId, a.rootKey);
    report(config, { scope: a.scope, sessionId: a.sessionId, rootKey: a.rootKey, cause: "expired", persisted, released: true });
  }
  return Object.freeze(out);
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
export async function listUnresolved(config: ResolvedConfig, scope: Scope, opts: { readonly cursor?: string; readonly limit?: number } = {}): Promise<UnresolvedPage> {
  const page = await config.stores.journal.list(scope, { ...opts, resolved: true });
  const settled = new Map<string, boolean>();
  const items: ExecutionRecord[] = [];
  for (const record of page.items) {
    let stored = settled.get(record.rootKey);
    if (stored === undefined) {
      stored = (await config.stores.rootResults.get(scope, record.rootKey, config.clock.now()))?.state === "stored";
      settled.set(record.rootKey, stored);
    }
    if (!stored) items.push(record);
  }
  return Object.freeze({ items: Object.freeze(items), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
}
