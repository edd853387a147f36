import type {
  AuditLog,
  Block,
  Clock,
  DurabilityBarrier,
  IdSource,
  JsonObject,
  LifecycleHooks,
  ModelChoice,
  ModelClient,
  ModelPolicy,
  Msg,
  MsgMeta,
  ProviderToolSpec,
  RoutingIntent,
  Scope,
  Tier,
  ToolDefinition,
  TrailKey,
  TrailKeyMaterial,
} from "@alma-harness/core";
import type { GovernedCalls } from "@alma-harness/execution";
import type { CacheHygieneGuard } from "./cache-hygiene.js";
import type { ContinuationWriter } from "./continuation.js";
import type { LoopEventSink } from "./events.js";
import type { MediaConfig } from "./media.js";
import type { PermissionController } from "./permission.js";
import type { ExtractionConfig } from "./extraction-config.js";
import type { RecallConfig } from "./recall.js";

export interface LoopLimits {
  /** Every model call of a turn (main, direct, delegate, summary). Required. */
  readonly maxCalls: number;
  /** Main steps; default `maxCalls`. */
  readonly maxSteps?: number;
  /** Tool calls of one step run in batches of this size; default 1 (sequential). */
  readonly maxParallelToolCalls?: number;
  /** Requested tool intentions in a turn, counted even when unknown or invalid. */
  readonly maxToolCalls?: number;
  /** Cumulative reported input + output tokens of the turn's calls. */
  readonly maxModelTokens?: number;
  /** Each model round's own deadline; default 60 s. */
  readonly roundTimeoutMs?: number;
  /**
   * The seed's name for `roundTimeoutMs` (seed 002: "a call its step runner aborted (usually
   * stepTimeoutMs)"): the same setting. Give either; both with different values is refused.
   */
  readonly stepTimeoutMs?: number;
  /** When less than this is left before the deadline, the step is the last (`timeLimit`); default `roundTimeoutMs`. */
  readonly stepReserveMs?: number;
  /**
   * Attempts of one model call, 1 to 5 (spec: call-retry). Absent: a failed call makes the turn
   * uncertain, as before. Set (even to 1): a call that failed in a way another attempt may mend is
   * tried again while attempts, `maxCalls` and time are left, and a call out of attempts ends a main
   * step `unanswered`, a child with empty text; a summary stays uncertain.
   */
  readonly callAttempts?: number;
  /** Replaces the text of every final-answer notice. */
  readonly finalAnswerNotice?: string;
  /** Deepest delegate nesting; default 2. */
  readonly maxDelegateDepth?: number;
  /** A delegate's own step ceiling when it names none; default 4. */
  readonly delegateMaxSteps?: number;
  /** How long a permission resolver may take before it is a denial; default 5 minutes. */
  readonly permissionTimeoutMs?: number;
}

export interface VolatileContext {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly intent: RoutingIntent;
  readonly trigger?: string;
  readonly now: number;
}

/**
 * The long-context policy (spec: long-context): session rotation with a summary. A cold start (the
 * newest recorded message older than `coldAfterMs`) whose history measures over `rotateAtTokens`
 * summarizes the older history on `summaryTier` and keeps the last `keepLastMessages` verbatim from
 * a user message; an attested zero-usage context rejection permits one reactive rotation.
 */
export interface LongContextPolicy {
  /** The history rotates on a cold start only when it measures strictly over this many tokens. */
  readonly rotateAtTokens: number;
  /** At most this many of the newest messages stay verbatim after the summary, starting at a user message. */
  readonly keepLastMessages: number;
  /** A session is cold when its newest recorded message is older than this; default five minutes. */
  readonly coldAfterMs?: number;
  /** The tier the summary call is routed on (task `summary`, the turn's sensitivity). */
  readonly summaryTier: Tier;
  /** The lines around a summary in the persisted marker; defaults in `DEFAULT_SUMMARY_FRAME`. */
  readonly summaryFrame?: { readonly before: string; readonly after: string };
  /** Tokens of the measured content text; default `ceil(characters / 4)`. */
  readonly estimateTokens?: (text: string) => number;
  /**
   * The tools that speak to the person, each with the argument that holds what it says (seed 000,
   * `speechTools`; for example `{ send_whatsapp: "text" }`): the summary reads a call of one as the
   * assistant's words to the person, whole, not as a tool call with its JSON.
   */
  readonly speechTools?: Readonly<Record<string, string>>;
}

export interface EngineConfig {
  readonly clients: readonly ModelClient[];
  readonly policy: ModelPolicy;
  readonly tools?: readonly ToolDefinition[];
  readonly providerTools?: readonly ProviderToolSpec[];
  readonly terminalTools?: readonly string[];
  /** The agent's static system prompt (the cached prefix). */
  readonly system?: string;
  /** Static volatile system text, joined with `volatile(ctx)` into the turn's harness block. */
  readonly volatileSystem?: readonly string[];
  readonly volatile?: (ctx: VolatileContext) => string | undefined | Promise<string | undefined>;
  readonly hooks?: LifecycleHooks;
  readonly permissions?: PermissionController;
  readonly limits: LoopLimits;
  readonly longContext?: LongContextPolicy;
  /**
   * Recall (issue 18): before the first step, bounded episodes and facts of the turn's scope at or
   * below its sensitivity, through a `RecallSource`, as one harness block before the volatile
   * suffix. A failing or hanging source degrades recall (`degradedTiers` on the recall trail),
   * never the turn. Absent: nothing is recalled and no recall record is written.
   */
  readonly recall?: RecallConfig;
  /**
   * Memory extraction (issue 18): after a completed turn, one governed `extraction` call on its own
   * route under the root's caps and call limit; a valid structured answer is written through the
   * memory stores. Its failure never changes the turn's outcome. Absent: nothing is extracted.
   */
  readonly extraction?: ExtractionConfig;
  /** Media by bytes (spec: media-by-bytes); absent, a media block goes by reference and one carrying content is refused. */
  readonly media?: MediaConfig;
  /**
   * A refused first call (an attested pre-stream rate limit or overload, nothing streamed) on a
   * turn with nothing but its input recorded ends `completed` with `terminalReason: "error"` and
   * records nothing (spec: pre-stream-rejections). Default false: the turn stays uncertain.
   */
  readonly releasePreStreamRejections?: boolean;
  readonly calls: GovernedCalls;
  readonly audit: AuditLog;
  /**
   * The deployment's trail key (HMAC-SHA256): the session id on every trail is its keyed
   * pseudonym, and a tool's subject and resource its keyed hash. At least 32 bytes, validated
   * here once. Absent: a random key made once per process (trails stay content-free but are
   * joinable only within the process); a host that keeps trails supplies a persistent one.
   */
  readonly trailKey?: TrailKey | TrailKeyMaterial;
  /** The store set's durability point, committed before host code runs (hooks, permissions, handlers, media). */
  readonly barrier?: DurabilityBarrier;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly sink?: LoopEventSink;
  /**
   * The cache-hygiene observer (`cacheHygieneGuard()`): told every settled main step's pinned
   * request and usage; its warnings land on the context trail and the sink. Absent, nothing runs.
   */
  readonly cacheHygiene?: CacheHygieneGuard;
  /**
   * Where the turn's continuation goes at each step boundary (issue 25): the turn's progress as a
   * closed, versioned record (`Continuation`). Awaited; a failure makes the turn uncertain (cause
   * `continuation`). Absent: no continuation is built.
   */
  readonly continuations?: ContinuationWriter;
  /**
   * What a main step's permission `ask` does (issue 25): `"wait"` (default) asks the controller's
   * resolver and waits, within `permissionTimeoutMs`; `"park"` makes the request durable and ends
   * the run `awaiting_approval` with the turn's continuation, holding no process, until
   * `resumeTurn` brings the decision. A delegate's call never parks.
   */
  readonly asks?: "wait" | "park";
}

/** One turn's input, already validated and snapshotted by the caller (the conversation runner). */
export interface TurnInput {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly turnId: string;
  /**
   * The admission holding the session for this turn: every journal claim of the turn is fenced by
   * it (committed only while it is active and before its deadline). Absent: the engine runs unfenced.
   */
  readonly admissionId?: string;
  /** The session view the turn starts from, and the log revision it was read at. */
  readonly history: readonly Msg[];
  /**
   * The stored view `history` was rendered from, message for message (same length): a rotation
   * re-records its kept tail from here verbatim. Absent: the history itself.
   */
  readonly log?: readonly Msg[];
  readonly revision: number;
  readonly input: readonly Block[];
  readonly inputMeta?: MsgMeta;
  readonly intent: RoutingIntent;
  /** The main route, snapshotted before admission; resolved from the policy when absent. */
  readonly choice?: ModelChoice;
  readonly trigger?: string;
  /**
   * This turn's call limit when it is narrower than the engine's (seed 002: a root's `maxCalls`
   * may narrow, never widen); 1 to the engine's `maxCalls`.
   */
  readonly maxCalls?: number;
  /** Tool names this turn may use (a profile); default every registered tool. */
  readonly grant?: readonly string[];
  readonly facts?: JsonObject;
  readonly signal?: AbortSignal;
  readonly deadlineAt?: number;
  /**
   * The answer-by time (spec: call-retry): every call of the turn ends by it, cause
   * `call:<kind>:deadline`, and the final answer by time counts back from it. Absent: `deadlineAt`.
   */
  readonly answerByAt?: number;
  readonly sink?: LoopEventSink;
  /**
   * This turn's continuation writer (a host that stores each turn under its own admission): it
   * gets the turn at every step boundary instead of the engine's `continuations`. A throw from it
   * ends the turn uncertain (cause `continuation`).
   */
  readonly continuations?: ContinuationWriter;
}

export {
  type BudgetMetric,
  TERMINAL_REASONS,
  type TerminalReason,
  type TurnCallFailure,
  type TurnOutcome,
  type TurnResult,
  type TurnToolCall,
} from "./result.js";
