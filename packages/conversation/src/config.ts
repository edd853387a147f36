import {
  type AdmissionStore,
  type AuditLog,
  type BudgetCaps,
  type BudgetCapsInput,
  type Clock,
  type CostSettlementStore,
  type DurabilityBarrier,
  type ExecutionResultStore,
  type ExecutionStore,
  type IdSource,
  normalizeBudgetCaps,
  normalizePriceTable,
  type ParkedTurnStore,
  type PriceTable,
  randomIds,
  type Scope,
  type SessionErasure,
  type SessionLabelStore,
  type SessionStore,
  type SpendStore,
  systemClock,
  type ToolContext,
  type ToolDefinition,
  resolveTrailKey,
  type TrailKey,
  type UncertainCause,
  type UsageInbox,
} from "@alma-harness/core";
import { type EngineConfig, type LoopLimits, MAX_CALL_ATTEMPTS } from "@alma-harness/loop";
import { ConversationConfigError } from "./errors.js";

export interface ConversationStores {
  readonly admissions: AdmissionStore;
  readonly sessions: SessionStore;
  /** Step results. */
  readonly results: ExecutionResultStore;
  /** Root (final) results: a physically separate namespace; the same object as `results` is refused. */
  readonly rootResults: ExecutionResultStore;
  readonly journal: ExecutionStore;
  readonly settlements: CostSettlementStore;
  readonly spend: SpendStore;
  readonly labels: SessionLabelStore;
  /**
   * Optional: where the usage of a call cut by its round timeout, the turn's deadline or a
   * cancellation goes when its stream finishes anyway (`@alma-harness/execution`'s `LateUsage`).
   * Evidence for the operator, never a settlement: the turn, its receipts and the caps are as the
   * cut left them. Absent: a cut call's stream is closed at once. Erasure must cover it.
   */
  readonly usageInbox?: UsageInbox;
  readonly audit: AuditLog;
  /** Erasure over every store above, atomic where the store allows (`eraseSession`, `eraseScope`). */
  readonly erasure: SessionErasure;
  /** A store set that groups its writes offers its durability point; the runner commits before every effect. */
  readonly barrier?: DurabilityBarrier;
  /**
   * A store set that groups each turn's writes (PostgreSQL's `commits: "grouped"`) runs the turn
   * inside `unit`: its writes share one transaction, committed at the durability points and when
   * `work` settles. Absent: every write stands alone.
   */
  readonly unit?: <T>(work: () => Promise<T>) => Promise<T>;
  /** Turns parked on permission asks: required with `asks: "park"`, beside `admissions`. */
  readonly parked?: ParkedTurnStore;
}

export interface UncertainTurnEvent {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly cause: UncertainCause;
  /** Whether a message of the turn is in the session; null when the read failed (treat as true). */
  readonly persisted: boolean | null;
  readonly released: boolean;
}

export interface EventLabels {
  readonly human?: string;
  readonly system?: string;
  readonly undelivered?: string;
}

/**
 * The engine's own options, exactly as the engine takes them (`EngineConfig` of the loop is their
 * one owner, and the engine validates and compiles them once). Everything here is part of the
 * behaviour `configRevision` covers: bump it when any of them changes.
 */
export type EngineOptions = Pick<
  EngineConfig,
  | "clients"
  | "policy"
  | "tools"
  | "providerTools"
  | "terminalTools"
  | "hooks"
  | "permissions"
  | "volatile"
  | "longContext"
  | "media"
  | "recall"
  | "extraction"
  | "releasePreStreamRejections"
  | "trailKey"
  | "cacheHygiene"
>;

/**
 * The seed's name for what the runner's `tools` hold (seed 002: "Tools use ConversationTool"): core's
 * `ToolDefinition`, the same type, made with `defineTool`.
 */
export type ConversationTool = ToolDefinition;
/**
 * The seed's name for what a handler receives (seed 002: "receive ConversationToolCtx"): core's
 * `ToolContext`, the same type, with `models.direct`, `delegate` and `tryDelegate`.
 */
export type ConversationToolCtx = ToolContext;

/** The runner's configuration: the engine's options plus what only the runner owns (stores, versions, retention, timeouts). */
export interface ConversationConfig extends EngineOptions {
  readonly stores: ConversationStores;
  /** The agent's prompt (the static system prefix). */
  readonly prompt: string;
  /** Named tool grants a request may pick with `toolProfile`. */
  readonly profiles?: Readonly<Record<string, readonly string[]>>;
  readonly caps?: BudgetCapsInput;
  readonly prices: PriceTable;
  readonly policyVersion: string;
  readonly priceVersion: string;
  readonly configRevision: string;
  readonly resultContractVersion?: number;
  readonly resultRetentionMs: number;
  /** Each turn's deadline; at most ten minutes. */
  readonly runTimeoutMs: number;
  readonly maxCalls: number;
  /**
   * Attempts of one model call, 1 to 5 (spec: call-retry). Absent: a failed call makes the turn
   * uncertain. Set it only when the host handles `unanswered`, and bump `configRevision`.
   */
  readonly callAttempts?: number;
  readonly maxInputChars: number;
  /**
   * The largest request the step runner sends, 1 to 1e9 characters of its JSON (core's
   * `requestChars`: system, messages, tools, output schema; UTF-16 code units). A call over it is
   * refused before dispatch, its journal `not_dispatched` (cause `invalid`), and ends without
   * another attempt as `call:<kind>:request_invalid` (seed 002, spec: refused-request). Absent: no
   * ceiling. A behavior: bump `configRevision` when it changes.
   */
  readonly maxRequestChars?: number;
  /** Largest final envelope, in characters of its JSON; default and at most 1,000,000. */
  readonly maxResultChars?: number;
  readonly consumers?: readonly string[];
  readonly limits?: Omit<LoopLimits, "maxCalls" | "callAttempts">;
  readonly eventLabels?: EventLabels;
  readonly facts?: Readonly<Record<string, string | number | boolean>>;
  /**
   * Told once per invocation whose turn ends `reconciliation_required` after it claimed (or may
   * have claimed) the session, and once more by `releaseExpired` for each turn it frees (cause
   * `expired`, `released: true`). A throw from it is swallowed; it is not behavior.
   */
  readonly onUncertainTurn?: (event: UncertainTurnEvent) => void;
  /**
   * What a permission `ask` does (issue 25). `"wait"` (default): the controller's `resolve` is
   * awaited inside the run. `"park"`: the run stores its continuation with the pending asks in
   * `stores.parked` and answers `awaiting_approval`, holding nothing in the process; `resolveAsk`
   * records decisions and a resume in any process goes on with the turn.
   */
  readonly asks?: "wait" | "park";
  /**
   * How long a parked ask waits for a decision, 1 s to 7 days (default one hour). The parked turn
   * holds its session meanwhile (a new key answers `busy`); at expiry the kernel denies what is
   * undecided (`ask_expired`) and the turn goes on. Parked time never counts against `runTimeoutMs`.
   */
  readonly approvalTtlMs?: number;
  /**
   * Wraps every run that goes on with a parked turn (after its claim), in whichever call started
   * it (`resolveAsk`, `resume`, the maintenance tick, the original key): a host that tracks its live
   * turns registers the resumed one here. It must call `run` once and return its promise.
   */
  readonly aroundResume?: (
    turn: { readonly scope: Scope; readonly sessionId: string; readonly rootKey: string },
    run: () => Promise<unknown>,
  ) => Promise<unknown>;
  readonly clock?: Clock;
  readonly ids?: IdSource;
}

export interface ResolvedConfig extends ConversationConfig, RootSettings {
  /** The deployment's trail key, validated once (the per-process key when none was given): the engine and `trails` share it. */
  readonly trailKey: TrailKey;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly resultContractVersion: number;
  readonly maxResultChars: number;
  readonly approvalTtlMs: number;
}

export const MAX_RUN_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_APPROVAL_TTL_MS = 60 * 60_000;
export const MAX_APPROVAL_TTL_MS = 7 * 24 * 60 * 60_000;
export const EXPIRED_RELEASE_GRACE_MS = 15 * 60_000;
/** The answer-by time's margin (spec: call-retry): calls end this long before the turn's deadline. */
export const ANSWER_BY_MARGIN_MS = 15_000;

/** When every call of a turn ends: `min(15 s, runTimeoutMs / 4)` before its deadline. */
export function answerByAt(runTimeoutMs: number, deadlineAt: number): number {
  return deadlineAt - Math.min(ANSWER_BY_MARGIN_MS, Math.floor(runTimeoutMs / 4));
}

function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++)
    if (text.charCodeAt(i) < 0x20 || text.charCodeAt(i) === 0x7f) return true;
  return false;
}

function int(name: string, value: unknown, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) {
    throw new ConversationConfigError(`${name} must be an integer ${min}-${max}`);
  }
  return value as number;
}

function text(name: string, value: unknown, max = 200): string {
  if (typeof value !== "string" || value.length < 1 || value.length > max)
    throw new ConversationConfigError(`${name} must be 1-${max} characters`);
  return value;
}

/**
 * What a root's descriptor must match (seed 002): the versions, retention, caps and call limit the
 * runner was built with, and the bounds a request is checked against. One owner: `resolveConfig`
 * and `createConversationDescriptor` both take them from here.
 */
export interface RootSettings {
  readonly configRevision: string;
  readonly resultContractVersion: number;
  readonly resultRetentionMs: number;
  readonly capsNormalized: BudgetCaps;
  readonly maxCalls: number;
  readonly maxInputChars: number;
  readonly profileNames: ReadonlySet<string>;
}

/** The part of a runner's configuration `createConversationDescriptor` reads (pass the whole one). */
export type DescriptorConfig = Pick<
  ConversationConfig,
  | "configRevision"
  | "resultContractVersion"
  | "resultRetentionMs"
  | "caps"
  | "maxCalls"
  | "maxInputChars"
  | "profiles"
>;

/** Validates and copies the settings a root is bound to; throws `ConversationConfigError` (caps: `TypeError`). */
export function rootSettings(config: DescriptorConfig): RootSettings {
  if (!config || typeof config !== "object")
    throw new ConversationConfigError("a configuration object is required");
  let capsNormalized: BudgetCaps;
  try {
    capsNormalized = normalizeBudgetCaps(config.caps);
  } catch (error) {
    throw error instanceof TypeError ? error : new TypeError(String(error));
  }
  return {
    configRevision: text("configRevision", config.configRevision),
    resultContractVersion: config.resultContractVersion ?? 1,
    resultRetentionMs: int("resultRetentionMs", config.resultRetentionMs, 1, 10 * 365 * 86_400_000),
    capsNormalized,
    maxCalls: int("maxCalls", config.maxCalls, 1, 1000),
    maxInputChars: int("maxInputChars", config.maxInputChars, 1, 10_000_000),
    profileNames: new Set(Object.keys(config.profiles ?? {})),
  };
}

function checkStores(stores: ConversationStores | undefined): void {
  if (!stores) throw new ConversationConfigError("stores are required");
  for (const key of [
    "admissions",
    "sessions",
    "results",
    "rootResults",
    "journal",
    "settlements",
    "spend",
    "labels",
    "audit",
    "erasure",
  ] as const) {
    if (!stores[key]) throw new ConversationConfigError(`stores.${key} is required`);
  }
  if (
    stores.usageInbox !== undefined &&
    (typeof stores.usageInbox?.record !== "function" ||
      typeof stores.usageInbox.list !== "function")
  ) {
    throw new ConversationConfigError("stores.usageInbox must be a usage inbox");
  }
  if (stores.parked !== undefined && typeof stores.parked?.claim !== "function")
    throw new ConversationConfigError("stores.parked must be a parked-turn store");
  if (stores.results === stores.rootResults)
    throw new ConversationConfigError(
      "stores.rootResults must be a separate namespace from stores.results",
    );
}

/** The runner's own options that are not root settings: tool grants, flags, labels. */
function checkOptions(config: ConversationConfig): void {
  const toolNames = new Set((config.tools ?? []).map((t) => t.name));
  for (const [name, list] of Object.entries(config.profiles ?? {})) {
    for (const tool of list)
      if (!toolNames.has(tool))
        throw new ConversationConfigError(
          `profile "${name}" names the unregistered tool "${tool}"`,
        );
  }
  if (
    config.releasePreStreamRejections !== undefined &&
    typeof config.releasePreStreamRejections !== "boolean"
  ) {
    throw new ConversationConfigError("releasePreStreamRejections must be a boolean");
  }
  if (config.eventLabels)
    for (const [k, v] of Object.entries(config.eventLabels)) {
      if (typeof v !== "string" || v.length < 1 || v.length > 500 || hasControl(v))
        throw new ConversationConfigError(
          `eventLabels.${k} must be 1-500 characters without control characters`,
        );
    }
}

/** Copies and validates the configuration synchronously; stores, clients and the policy are trusted capabilities. */
export function resolveConfig(config: ConversationConfig): ResolvedConfig {
  if (!config || typeof config !== "object")
    throw new ConversationConfigError("a configuration object is required");
  checkStores(config.stores);
  text("prompt", config.prompt, 200_000);
  text("policyVersion", config.policyVersion);
  text("priceVersion", config.priceVersion);
  const settings = rootSettings(config);
  const prices = normalizePriceTable(config.prices);
  if (prices.version !== config.priceVersion)
    throw new ConversationConfigError("priceVersion must equal prices.version");
  checkOptions(config);
  let trailKey: TrailKey;
  try {
    trailKey = resolveTrailKey(config.trailKey);
  } catch (error) {
    throw new ConversationConfigError((error as Error).message);
  }
  return {
    ...config,
    ...settings,
    trailKey,
    prices,
    clock: config.clock ?? systemClock,
    ids: config.ids ?? randomIds,
    runTimeoutMs: int("runTimeoutMs", config.runTimeoutMs, 1, MAX_RUN_TIMEOUT_MS),
    ...(config.callAttempts !== undefined
      ? { callAttempts: int("callAttempts", config.callAttempts, 1, MAX_CALL_ATTEMPTS) }
      : {}),
    maxResultChars: int("maxResultChars", config.maxResultChars ?? 1_000_000, 1, 1_000_000),
    ...(config.maxRequestChars !== undefined
      ? { maxRequestChars: int("maxRequestChars", config.maxRequestChars, 1, 1_000_000_000) }
      : {}),
    approvalTtlMs: int(
      "approvalTtlMs",
      config.approvalTtlMs ?? DEFAULT_APPROVAL_TTL_MS,
      1_000,
      MAX_APPROVAL_TTL_MS,
    ),
    ...asksOf(config),
    consumers: Object.freeze([...(config.consumers ?? [])]),
  };
}

/** `asks`: "wait" or "park"; parking needs a parked-turn store. */
function asksOf(config: ConversationConfig): { readonly asks?: "wait" | "park" } {
  if (config.asks === undefined || config.asks === "wait") return {};
  if (config.asks !== "park") throw new ConversationConfigError('asks must be "wait" or "park"');
  if (!config.stores.parked)
    throw new ConversationConfigError('asks: "park" needs stores.parked (a parked-turn store)');
  return { asks: "park" };
}
