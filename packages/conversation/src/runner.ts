import type {
  ErasureReport,
  Scope,
  ScopeFence,
  ScopeFenceReason,
  ScopeFenceTarget,
} from "@alma-harness/core";
import { GovernedCalls } from "@alma-harness/execution";
import { createEngine, type Engine } from "@alma-harness/loop";
import { closedObject as closedRecord } from "@alma-harness/core/stores";
import {
  type ConversationConfig,
  type EngineOptions,
  type ResolvedConfig,
  resolveConfig,
} from "./config.js";
import { eraseScope, eraseSession } from "./erasure.js";
import { eventsApi, type RecordEventsRequest, type RecordEventsResult } from "./events.js";
import { normalizeRequest, type TurnRequest } from "./request.js";
import { promptCacheKey } from "./keys.js";
import {
  type ExpiredRelease,
  listUnresolved,
  releaseExpired,
  releaseExpiredEvents,
  type UnresolvedPage,
} from "./maintenance.js";
import type { ResolveAskRequest, ResolveAskResult } from "./asks.js";
import { parkingApi } from "./parking-api.js";
import type { ParkedAskView } from "./parking.js";
import { readRoot, readSteps } from "./read.js";
import { resumeDue } from "./resume.js";
import { type ConversationStream, streamConversation } from "./stream.js";
import { type AuditPage, readTrails, type SessionTrailQuery } from "./trails.js";
import { execute, type TurnDeps } from "./turn.js";
import type { ConversationView } from "./views.js";

export interface ConversationRunner {
  /**
   * One governed turn: the simple form (`{scope, sessionId, idempotencyKey, input, intent, ...}`)
   * or the explicit one (`{root, intent, loadInput, ...}`, seed 002), one implementation.
   */
  runTurn(request: TurnRequest): Promise<ConversationView>;
  streamTurn(request: TurnRequest): ConversationStream;
  read(scope: Scope, rootKey: string): Promise<ConversationView | null>;
  /**
   * The root's stored step outputs after step `after` (0: from the first), for a stream reader
   * that reconnects (`Last-Event-ID`): each re-read under retention and erasure, `unavailable` as
   * soon as one is gone. Read `read` first: another scope's root reads as absent there.
   */
  readSteps(scope: Scope, rootKey: string, after: number): ReturnType<typeof readSteps>;
  recordEvents(request: RecordEventsRequest): Promise<RecordEventsResult>;
  /** Erases the session in every store (see `SessionErasure`): a turn holding it is fenced; idempotent. */
  eraseSession(scope: Scope, sessionId: string): Promise<ErasureReport>;
  /** Erases everything of the scope in every store, the same way. */
  eraseScope(scope: Scope): Promise<ErasureReport>;
  /**
   * A scope's trail records, filtered by the real session id: the one place a session id is
   * translated to the pseudonym the trails store (`sessionPseudonym` with this runner's key).
   */
  trails(scope: Scope, query?: SessionTrailQuery): Promise<AuditPage>;
  /**
   * Frees admissions fifteen minutes past their deadline (turns and event batches) and returns them;
   * each turn among them is reported to `onUncertainTurn` (cause `expired`).
   */
  releaseExpired(scope?: Scope): Promise<readonly ExpiredRelease[]>;
  /**
   * Releases the session's event admission (a `recordEvents` batch) fifteen minutes past its
   * deadline, active or uncertain, never a turn's; returns what it released (none or one).
   */
  releaseExpiredEvents(request: {
    readonly scope: Scope;
    readonly sessionId: string;
  }): Promise<readonly ExpiredRelease[]>;
  /**
   * Fences a whole org (`{org}`) or one scope (`{org, uid}`), durably (spec: scope-fence): a new key
   * rejects with `ScopeFencedError` before admission, a stored key still replays, and a turn admitted
   * before ends `reconciliation_required` (cause `scope_fenced`) at its next claim, session append
   * or final result, dispatching nothing more. A second fence of the target keeps the first.
   */
  fenceScope(request: {
    readonly target: ScopeFenceTarget;
    readonly reason: ScopeFenceReason;
  }): Promise<ScopeFence>;
  /** Lifts exactly that target's fence (an org's fence does not lift a uid's); whether one was there. */
  liftScopeFence(target: ScopeFenceTarget): Promise<boolean>;
  /** `{org}`: every fence of the org; `{org, uid}`: the fences covering that scope (the org's and its own). */
  scopeFences(target: ScopeFenceTarget): Promise<readonly ScopeFence[]>;
  /**
   * Records a person's decision on a parked ask (`asks: "park"`), durably and first-wins, then goes
   * on with the turn in this process when every ask of it is decided: the view it came to
   * (`completed`, or `awaiting_approval` while other asks wait). A forged, replayed, expired or
   * late token, a decision for another digest, an ask decided already or unknown: `AskRefusedError`,
   * nothing recorded, nothing run.
   */
  resolveAsk(
    request: ResolveAskRequest,
  ): Promise<ResolveAskResult & { readonly view: ConversationView }>;
  /**
   * `resolveAsk`'s first half: records the decision (the same refusals) and says whether the turn
   * is ready to go on; the host then calls `resume` (in the background, in any process).
   */
  decideAsk(request: ResolveAskRequest): Promise<ResolveAskResult & { readonly ready: boolean }>;
  /**
   * Goes on with a parked turn once it is ready (every ask decided, or expired): exactly one
   * caller across processes claims it; the others read the root (`in_progress`,
   * `awaiting_approval`, or the settled view).
   */
  resume(scope: Scope, rootKey: string): Promise<ConversationView>;
  /** A decision token for a parked ask of the scope (see `askTokenOf`); undefined when no such ask waits. */
  askToken(scope: Scope, askId: string): Promise<string | undefined>;
  /**
   * The undecided asks of an org's (or one scope's) parked turns, oldest park first, each with its
   * call's arguments, digest and expiry: an operator's listing, read from the store.
   */
  parkedAsks(input: {
    readonly org: string;
    readonly uid?: string;
    readonly limit?: number;
  }): Promise<readonly ParkedAskView[]>;
  /** One undecided ask by id, in whichever scope it waits (an operator's route names only the ask). */
  findAsk(askId: string): Promise<ParkedAskView | undefined>;
  /**
   * Goes on with every parked turn due now (asks expired: the kernel denies them; a resumed run
   * that died), oldest expiry first; `releaseExpired` runs it first. Returns the views.
   */
  resumeDue(scope?: Scope): Promise<readonly ConversationView[]>;
  /** Journal records whose turn has no stored final result (in every state), a journal page at a time. */
  listUnresolved(
    scope: Scope,
    opts?: { readonly cursor?: string; readonly limit?: number },
  ): Promise<UnresolvedPage>;
  /** Fences expired journal records; never re-sends. */
  reconcileExpired(scope?: Scope): Promise<number>;
}

/** Builds the one entrypoint hosts use. Bad configuration throws here, synchronously. */
export function createConversationRunner(input: ConversationConfig): ConversationRunner {
  const config = resolveConfig(input);
  const { stores, clock } = config;
  const scopeCacheKey = promptCacheKey(config.trailKey);
  const calls = new GovernedCalls({
    journal: stores.journal,
    settlements: stores.settlements,
    spend: stores.spend,
    prices: config.prices,
    caps: config.capsNormalized,
    policyVersion: config.policyVersion,
    audit: stores.audit,
    consumers: config.consumers ?? [],
    clock,
    ...(stores.usageInbox ? { usageInbox: stores.usageInbox } : {}),
    ...(config.maxRequestChars !== undefined ? { maxRequestChars: config.maxRequestChars } : {}),
    // OpenAI's `prompt_cache_key`: the scope's keyed hash (`promptCacheKey`).
    cacheKey: ({ scope }) => scopeCacheKey(scope),
  });
  const deps: TurnDeps = { config, engine: engineOf(config, calls), events: eventsApi(config) };
  const { events } = deps;
  const runner: ConversationRunner = {
    runTurn: (request) => {
      try {
        const normalized = normalizeRequest(request, config);
        return inUnit(config, () => execute(deps, normalized));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    streamTurn: (request) => {
      const normalized = normalizeRequest(request, config);
      return streamConversation(
        config,
        normalized,
        (outputs) => inUnit(config, () => execute(deps, normalized, outputs)),
        (scope, key) => readRoot(config, scope, key),
      );
    },
    read: (scope, rootKey) => readRoot(config, scope, rootKey),
    readSteps: (scope, rootKey, after) => readSteps(config, scope, rootKey, after),
    trails: (scope, query) => readTrails(config, scope, query),
    recordEvents: (request) => inUnit(config, () => events.record(request)),
    eraseSession: (scope, sessionId) => eraseSession(config, scope, sessionId),
    eraseScope: (scope) => eraseScope(config, scope),
    releaseExpired: async (scope) => {
      await resumeDue(deps, scope);
      return releaseExpired(config, scope === undefined ? {} : { scope });
    },
    ...parkingApi(deps, (work) => inUnit(config, work)),
    releaseExpiredEvents: (request) => releaseExpiredEvents(config, request),
    fenceScope: async (request) =>
      stores.admissions.fenceScope({ ...fenceRequest(request), now: clock.now() }),
    liftScopeFence: (target) => stores.admissions.liftScopeFence(target),
    scopeFences: (target) => stores.admissions.scopeFences(target),
    listUnresolved: (scope, opts) => listUnresolved(config, scope, opts),
    reconcileExpired: async (scope) =>
      (await stores.journal.reconcileExpired({ now: clock.now(), ...(scope ? { scope } : {}) }))
        .length,
  };
  return Object.freeze(runner);
}

/** `fenceScope`'s request as plain data (the store validates the target and the reason). */
function fenceRequest(request: unknown): {
  readonly target: ScopeFenceTarget;
  readonly reason: ScopeFenceReason;
} {
  const r = closedRecord("fenceScope", request, ["target", "reason"]);
  return { target: r.target as ScopeFenceTarget, reason: r.reason as ScopeFenceReason };
}

const ENGINE_OPTIONS = [
  "clients",
  "policy",
  "tools",
  "providerTools",
  "terminalTools",
  "hooks",
  "permissions",
  "volatile",
  "longContext",
  "media",
  "recall",
  "extraction",
  "releasePreStreamRejections",
  "trailKey",
  "cacheHygiene",
] as const satisfies readonly (keyof EngineOptions)[];

/** The engine's own options out of the runner's configuration (absent ones stay absent). */
function engineOptions(config: ResolvedConfig): EngineOptions {
  const out: Record<string, unknown> = {};
  for (const key of ENGINE_OPTIONS) if (config[key] !== undefined) out[key] = config[key];
  return out as unknown as EngineOptions;
}

/**
 * The runner's engine, built here so bad configuration throws at construction. A root's narrower
 * `maxCalls` (seed 002: "maxCalls may narrow") travels with its turn's input.
 */
function engineOf(config: ResolvedConfig, calls: GovernedCalls): Engine {
  return createEngine({
    ...engineOptions(config),
    system: config.prompt,
    limits: {
      ...config.limits,
      maxCalls: config.maxCalls,
      ...(config.callAttempts !== undefined ? { callAttempts: config.callAttempts } : {}),
    },
    calls,
    audit: config.stores.audit,
    ...(config.stores.barrier ? { barrier: config.stores.barrier } : {}),
    clock: config.clock,
    ids: config.ids,
    ...(config.asks === "park" ? { asks: "park" as const } : {}),
  });
}

/** A turn's writes as one unit of the store set, when it offers units (else as they come). */
function inUnit<T>(config: ResolvedConfig, work: () => Promise<T>): Promise<T> {
  const unit = config.stores.unit;
  return unit ? unit(work) : work();
}
