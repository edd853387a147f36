import type { AuditLog, Clock, IdSource, LifecycleHooks, ModelClient, ModelPolicy, ProviderToolSpec, ToolDefinition, ToolSpec } from "@alma-harness/core";
import type { GovernedCalls } from "@alma-harness/execution";
import type { TurnInput } from "./engine.js";
import type { LoopEvent, LoopEventSink } from "./events.js";
import { emitTo } from "./events.js";
import type { ResolvedLimits } from "./limits.js";
import type { PermissionController } from "./permission.js";

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
  readonly volatile: ((ctx: import("./engine.js").VolatileContext) => string | undefined | Promise<string | undefined>) | undefined;
  readonly hooks: LifecycleHooks;
  readonly permissions: PermissionController | undefined;
  readonly limits: ResolvedLimits;
  readonly calls: GovernedCalls;
  readonly audit: AuditLog;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly sink: LoopEventSink | undefined;
}

/** One running turn: the compiled engine, the turn's input and its signal. */
export interface TurnEnv {
  readonly engine: CompiledEngine;
  readonly input: TurnInput;
  readonly signal: AbortSignal;
  readonly grant: readonly ToolDefinition[];
  readonly emit: (event: LoopEvent) => void;
}

export function makeEmitter(engine: CompiledEngine, input: TurnInput): (event: LoopEvent) => void {
  return (event) => {
    emitTo(engine.sink, event);
    emitTo(input.sink, event);
  };
}
