import type { ConversationConfig, ConversationRunner, ConversationStores, ExpiredRelease, RecordEventsRequest } from "@alma-harness/conversation";
import { createConversationRunner } from "@alma-harness/conversation";
import { type ErasureReport, normalizeScope, type Scope, scopePath } from "@alma-harness/core";
import type { GovernedStepRunner } from "@alma-harness/single-call";
import { stepRunnerOf } from "./steps.js";

/** Everything a runner needs except its stores. */
export type RuntimeConfig = Omit<ConversationConfig, "stores">;

/** A ready runner plus the maintenance calls a host runs on a timer. */
export interface Runtime {
  readonly runner: ConversationRunner;
  readonly stores: ConversationStores;
  /**
   * The governed step runner on the same stores, clients, policy, prices, caps and trail key
   * (`@alma-harness/single-call`): one structured call per key, no session append.
   */
  readonly steps: GovernedStepRunner;
  /**
   * First `runner.releaseExpiredEvents` for each session whose `recordEvents` answered
   * `reconciliation_required` through this runtime (its event admission held to its deadline; the
   * session is forgotten once no event admission holds it), then frees every admission fifteen
   * minutes past its deadline (each turn reported to `onUncertainTurn`, cause `expired`;
   * `released.length` is the count), then fences expired journal records.
   */
  maintain(scope?: Scope): Promise<{ readonly released: readonly ExpiredRelease[]; readonly fenced: number }>;
  /** The runner's `eraseSession`: every store, one transaction where the store allows. */
  erase(scope: Scope, sessionId: string): Promise<ErasureReport>;
  /** The runner's `eraseScope`. */
  eraseScope(scope: Scope): Promise<ErasureReport>;
  close(): Promise<void>;
}

export function compose(config: RuntimeConfig, stores: ConversationStores, close: () => Promise<void>): Runtime {
  const base = createConversationRunner({ ...config, stores });
  /** Sessions whose event batch was left holding its admission (`reconciliation_required`), by `org/uid session`. */
  const heldByEvents = new Map<string, { readonly scope: Scope; readonly sessionId: string }>();
  const runner: ConversationRunner = Object.freeze({
    ...base,
    recordEvents: async (request: RecordEventsRequest) => {
      const result = await base.recordEvents(request);
      if (result.status === "reconciliation_required") {
        const scope = normalizeScope(request.scope);
        heldByEvents.set(`${scopePath(scope)} ${request.sessionId}`, { scope, sessionId: request.sessionId });
      }
      return result;
    },
  });
  const releaseHeldEvents = async (scope?: Scope): Promise<ExpiredRelease[]> => {
    const only = scope === undefined ? undefined : scopePath(scope);
    const out: ExpiredRelease[] = [];
    for (const [key, held] of heldByEvents) {
      if (only !== undefined && scopePath(held.scope) !== only) continue;
      out.push(...(await runner.releaseExpiredEvents(held)));
      if ((await stores.admissions.holder(held.scope, held.sessionId))?.kind !== "events") heldByEvents.delete(key);
    }
    return out;
  };
  return {
    runner,
    stores,
    steps: stepRunnerOf(config, stores),
    maintain: async (scope) => {
      const events = await releaseHeldEvents(scope);
      return { released: [...events, ...(await runner.releaseExpired(scope))], fenced: await runner.reconcileExpired(scope) };
    },
    erase: (scope, sessionId) => runner.eraseSession(scope, sessionId),
    eraseScope: (scope) => runner.eraseScope(scope),
    close,
  };
}
