import type { ConversationConfig, ConversationRunner, ConversationStores, ExpiredRelease } from "@alma-harness/conversation";
import { createConversationRunner } from "@alma-harness/conversation";
import type { ErasureReport, Scope } from "@alma-harness/core";

/** Everything a runner needs except its stores. */
export type RuntimeConfig = Omit<ConversationConfig, "stores">;

/** A ready runner plus the maintenance calls a host runs on a timer. */
export interface Runtime {
  readonly runner: ConversationRunner;
  readonly stores: ConversationStores;
  /**
   * Frees admissions fifteen minutes past their deadline (each turn reported to `onUncertainTurn`,
   * cause `expired`; `released.length` is the count), then fences expired journal records.
   */
  maintain(scope?: Scope): Promise<{ readonly released: readonly ExpiredRelease[]; readonly fenced: number }>;
  /** The runner's `eraseSession`: every store, one transaction where the store allows. */
  erase(scope: Scope, sessionId: string): Promise<ErasureReport>;
  /** The runner's `eraseScope`. */
  eraseScope(scope: Scope): Promise<ErasureReport>;
  close(): Promise<void>;
}

export function compose(config: RuntimeConfig, stores: ConversationStores, close: () => Promise<void>): Runtime {
  const runner = createConversationRunner({ ...config, stores });
  return {
    runner,
    stores,
    maintain: async (scope) => ({ released: await runner.releaseExpired(scope), fenced: await runner.reconcileExpired(scope) }),
    erase: (scope, sessionId) => runner.eraseSession(scope, sessionId),
    eraseScope: (scope) => runner.eraseScope(scope),
    close,
  };
}
