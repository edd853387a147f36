import type {
  AuditLog,
  Clock,
  TrailKey,
  DurabilityBarrier,
  IdSource,
  LifecycleHooks,
  ModelClient,
  ModelPolicy,
  ProviderToolSpec,
  ToolDefinition,
  ToolSpec,
} from "@alma-harness/core";
import type { GovernedCalls } from "@alma-harness/execution";
import type { CacheHygieneGuard } from "./cache-hygiene.js";
import type { ContinuationWriter } from "./continuation.js";
import type { TurnInput, VolatileContext } from "./engine.js";
import type { LoopEventSink } from "./events.js";
import type { ResolvedLimits } from "./limits.js";
import type { CompiledLongContext } from "./long-context.js";
import type { CompiledMedia } from "./media.js";
import type { PermissionController } from "./permission.js";
import type { CompiledExtraction } from "./extraction-config.js";
import type { CompiledRecall } from "./recall.js";
import type { Grant } from "./grant.js";
import type { Recorder } from "./recorder.js";

/** The engine's configuration, validated and compiled once at construction. */
export interface CompiledEngine {
  readonly clients: ReadonlyMap<string, ModelClient>;
  readonly policy: ModelPolicy;
  readonly tools: ReadonlyMap<string, ToolDefinition>;
  /** Registration order, for stable advertisement. */
  readonly toolOrder: readonly ToolDefinition[];
  readonly specs: ReadonlyMap<string, ToolSpec>;
  readonly providerTools: readonly ProviderToolSpec[];
  readonly terminalTools: ReadonlySet<string>;
  readonly system: string | undefined;
  readonly volatileSystem: readonly string[];
  readonly volatile:
    | ((ctx: VolatileContext) => string | undefined | Promise<string | undefined>)
    | undefined;
  readonly hooks: LifecycleHooks;
  readonly permissions: PermissionController | undefined;
  readonly limits: ResolvedLimits;
  readonly longContext: CompiledLongContext | undefined;
  readonly media: CompiledMedia | undefined;
  readonly recall: CompiledRecall | undefined;
  readonly extraction: CompiledExtraction | undefined;
  readonly releasePreStreamRejections: boolean;
  readonly calls: GovernedCalls;
  readonly audit: AuditLog;
  readonly trailKey: TrailKey;
  readonly barrier: DurabilityBarrier | undefined;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly sink: LoopEventSink | undefined;
  readonly cacheHygiene: CacheHygieneGuard | undefined;
  readonly continuations: ContinuationWriter | undefined;
  /** A main step's permission ask parks the turn (`asks: "park"`) instead of waiting. */
  readonly park: boolean;
}

/**
 * One running turn, as only the driver holds it: the compiled engine, the turn's validated input,
 * its signal, its grant and its recorder. Stages take the narrow parts they use.
 */
export interface TurnEnv {
  readonly engine: CompiledEngine;
  readonly input: TurnInput;
  /** Aborts on the caller's cancellation or the turn's deadline (children get a narrower one). */
  readonly signal: AbortSignal;
  readonly grant: Grant;
  /** The engine's limits, with the turn's narrower `maxCalls` when its input names one. */
  readonly limits: ResolvedLimits;
  /** The turn's trails, events and durability point, with its trail values built once. */
  readonly rec: Recorder;
}
