import type {
  ConversationConfig,
  ConversationRunner,
  ConversationStores,
  ExpiredRelease,
  RecordEventsRequest,
} from "@alma-harness/conversation";
import { createConversationRunner } from "@alma-harness/conversation";
import {
  type BudgetCapsInput,
  type EmbeddingClient,
  type EpisodeStore,
  type ErasureReport,
  type MemoryErasure,
  normalizeScope,
  type ParkedTurnStore,
  type ProfileStore,
  resolveTrailKey,
  type Scope,
  scopePath,
  type TrailKey,
  ValidationError,
} from "@alma-harness/core";
import {
  createMemoryErasure,
  type MemoryHostErasure,
  semanticRecall,
  storeRecall,
} from "@alma-harness/memory";
import { governedCallsOver } from "./model-jobs.js";
import type { GovernedStepRunner } from "@alma-harness/single-call";
import { stepRunnerOf } from "./steps.js";
import { observedAudit, type TrailObserver } from "./trail-observer.js";

/**
 * Recall and extraction over the composition's own memory stores (issue 18): `recall` reads through
 * `storeRecall(stores)` unless it names another source, `extraction` writes into the same stores.
 */
type RecallConfig = NonNullable<ConversationConfig["recall"]>;
type ExtractionConfig = NonNullable<ConversationConfig["extraction"]>;

/**
 * Semantic ranking for recall (`semanticRecall` of `@alma-harness/memory`): the stores' lexical
 * candidates re-ranked by an `EmbeddingClient`, the embedding a governed call of its own over the
 * runtime's stores, priced by the runtime's price table (which must price `model`; unpriced, recall
 * stays lexical).
 */
export interface RuntimeEmbedding {
  readonly client: EmbeddingClient;
  readonly model: string;
  readonly candidates?: number;
}

export interface RuntimeMemory {
  readonly recall?: Omit<RecallConfig, "source"> & {
    readonly source?: RecallConfig["source"];
    readonly embedding?: RuntimeEmbedding;
  };
  readonly extraction?: Omit<ExtractionConfig, "stores">;
}

/** Everything a runner needs except its stores; `memory` wires recall and extraction to the set's memory stores. */
export type RuntimeConfig = Omit<ConversationConfig, "stores"> & {
  readonly memory?: RuntimeMemory;
  /** Told of every trail record the runner's audit log accepted (`@alma-harness/otel`'s `observe`). */
  readonly onTrail?: TrailObserver;
};

/**
 * The store set a composition hands out: the runner's stores and the memory stores (issue 18) over
 * the same backend, the set's `erasure` covering memory too.
 */
export type RuntimeStores = ConversationStores & {
  readonly episodes: EpisodeStore;
  readonly profiles: ProfileStore;
  /** The memory side of erasure alone; `erasure` (and so `runner.eraseSession`) covers memory already. */
  readonly memoryErasure: MemoryErasure;
  /** Turns parked on permission asks (issue 25), beside `admissions`; `erasure` covers them. */
  readonly parked: ParkedTurnStore;
};

/** A ready runner plus the maintenance calls a host runs on a timer. */
export interface Runtime {
  readonly runner: ConversationRunner;
  readonly stores: RuntimeStores;
  /** `createMemoryErasure` over this set under the runner's trail key: a session or a scope erased everywhere, one pseudonymous audit event. */
  readonly memory: MemoryHostErasure;
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
  maintain(
    scope?: Scope,
  ): Promise<{ readonly released: readonly ExpiredRelease[]; readonly fenced: number }>;
  /** The runner's `eraseSession`: every store, one transaction where the store allows. */
  erase(scope: Scope, sessionId: string): Promise<ErasureReport>;
  /** The runner's `eraseScope`. */
  eraseScope(scope: Scope): Promise<ErasureReport>;
  /**
   * A runner over the same stores and configuration whose caps are the configuration's with
   * `caps` over them (a routine's per-run cap is its `perTurnUsd`); one per distinct caps, kept.
   */
  runnerFor(caps: BudgetCapsInput): ConversationRunner;
  /** The key its runner's trails (and its model jobs' items) are keyed with. */
  readonly trailKey: TrailKey;
  close(): Promise<void>;
}

/** `memory.recall` bound to the set: its own source, else semantic ranking when an embedding is given, else `storeRecall`. */
function recallOver(
  config: RuntimeConfig,
  given: NonNullable<RuntimeMemory["recall"]>,
  stores: RuntimeStores,
): RecallConfig {
  const { embedding, source, ...bounds } = given;
  if (source !== undefined && embedding !== undefined)
    throw new ValidationError(
      "memory",
      "one_source",
      "give recall a source or an embedding, not both",
    );
  if (source !== undefined) return { ...bounds, source };
  if (embedding === undefined) return { ...bounds, source: storeRecall(stores) };
  const calls = governedCallsOver(stores, {
    prices: config.prices,
    caps: config.caps,
    policyVersion: config.policyVersion,
    ...(config.clock ? { clock: config.clock } : {}),
  });
  const semantic = semanticRecall({
    stores,
    embedding: embedding.client,
    calls,
    model: embedding.model,
    trailKey: resolveTrailKey(config.trailKey),
    ...(embedding.candidates !== undefined ? { candidates: embedding.candidates } : {}),
  });
  return { ...bounds, source: semantic };
}

/** The runner's configuration: `memory`'s recall and extraction bound to the set's memory stores. */
function runnerConfig(config: RuntimeConfig, stores: RuntimeStores): ConversationConfig {
  const { memory, onTrail: _observer, ...rest } = config;
  if (memory === undefined) return { ...rest, stores };
  if ((memory.recall && rest.recall) || (memory.extraction && rest.extraction)) {
    throw new ValidationError(
      "memory",
      "one_recall",
      "give recall and extraction either in `memory` or on their own, not both",
    );
  }
  const recall = memory.recall ? recallOver(config, memory.recall, stores) : rest.recall;
  const extraction = memory.extraction ? { ...memory.extraction, stores } : rest.extraction;
  return { ...rest, stores, ...(recall ? { recall } : {}), ...(extraction ? { extraction } : {}) };
}

export function compose(
  config: RuntimeConfig,
  given: RuntimeStores,
  close: () => Promise<void>,
): Runtime {
  const stores = config.onTrail
    ? { ...given, audit: observedAudit(given.audit, config.onTrail) }
    : given;
  const base = createConversationRunner(runnerConfig(config, stores));
  /** Sessions whose event batch was left holding its admission (`reconciliation_required`), by `org/uid session`. */
  const heldByEvents = new Map<string, { readonly scope: Scope; readonly sessionId: string }>();
  const runner: ConversationRunner = Object.freeze({
    ...base,
    recordEvents: async (request: RecordEventsRequest) => {
      const result = await base.recordEvents(request);
      if (result.status === "reconciliation_required") {
        const scope = normalizeScope(request.scope);
        heldByEvents.set(`${scopePath(scope)} ${request.sessionId}`, {
          scope,
          sessionId: request.sessionId,
        });
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
      if ((await stores.admissions.holder(held.scope, held.sessionId))?.kind !== "events")
        heldByEvents.delete(key);
    }
    return out;
  };
  const byCaps = new Map<string, ConversationRunner>();
  const runnerFor = (caps: BudgetCapsInput): ConversationRunner => {
    const key = JSON.stringify(caps);
    let found = byCaps.get(key);
    if (!found) {
      found = createConversationRunner({
        ...runnerConfig(config, stores),
        caps: { ...config.caps, ...caps },
      });
      byCaps.set(key, found);
    }
    return found;
  };
  const key = resolveTrailKey(config.trailKey);
  return {
    runner,
    stores,
    memory: createMemoryErasure({ stores, trailKey: key }),
    trailKey: key,
    runnerFor,
    steps: stepRunnerOf(config, stores),
    maintain: async (scope) => {
      const events = await releaseHeldEvents(scope);
      return {
        released: [...events, ...(await runner.releaseExpired(scope))],
        fenced: await runner.reconcileExpired(scope),
      };
    },
    erase: (scope, sessionId) => runner.eraseSession(scope, sessionId),
    eraseScope: (scope) => runner.eraseScope(scope),
    close,
  };
}
