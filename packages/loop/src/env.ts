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
import type { LoopEvent, LoopEventSink } from "./events.js";
import { emitTo } from "./events.js";
import type { ResolvedLimits } from "./limits.js";
import type { CompiledLongContext } from "./long-context.js";
import type { CompiledMedia } from "./media.js";
import type { PermissionController } from "./permission.js";
import type { CompiledExtraction } from "./extraction.js";
import type { CompiledRecall } from "./recall.js";
import type { TurnTrail } from "./trail.js";

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
}

/** One running turn: the compiled engine, the turn's validated input, its signal and its grant. */
export interface TurnEnv {
  readonly engine: CompiledEngine;
  readonly input: TurnInput;
  /** Aborts on the caller's cancellation or the turn's deadline (children get a narrower one). */
  readonly signal: AbortSignal;
  /** The turn's granted tools, in registration order. */
  readonly grant: readonly ToolDefinition[];
  readonly grantMap: ReadonlyMap<string, ToolDefinition>;
  readonly emit: (event: LoopEvent) => void;
  /** The turn's trail values: the session pseudonym, the turn id, the keyed hash. */
  readonly trail: TurnTrail;
}

/** One emitter for the engine's sink and the turn's; neither is awaited, neither can throw into the turn. */
export function makeEmitter(engine: CompiledEngine, input: TurnInput): (event: LoopEvent) => void {
  const sinks = [engine.sink, input.sink].filter((s): s is LoopEventSink => s !== undefined);
  if (sinks.length === 0) return () => undefined;
  return (event) => {
    for (const sink of sinks) emitTo(sink, event);
  };
}
