import type {
  Clock,
  JsonObject,
  LifecycleHooks,
  Sensitivity,
  StreamToolCall,
  ToolDefinition,
  ToolResultBlock,
} from "@alma-harness/core";
import type { Grant } from "./grant.js";
import type { ResolvedLimits } from "./limits.js";
import type { PermissionController } from "./permission.js";
import type { Recorder } from "./recorder.js";
import type { TurnState } from "./state.js";
import type { ModelCalls } from "./step.js";

/**
 * What running a step's tool calls reads of the turn, handed down from the tool stage to the
 * dispatch, each call's admission and execution, the handler's gateways and their children. The
 * signal and the caller's own grant and sensitivity travel separately (`DispatchOptions`): a
 * delegate narrows them, never this.
 */
export interface ToolRun {
  readonly rec: Recorder;
  readonly state: TurnState;
  /** The turn's model calls, for a handler's children (they share the root's limits and money). */
  readonly calls: ModelCalls;
  /** The turn's grant: its search at depth 0, and the registered names a trail may carry. */
  readonly grant: Grant;
  readonly hooks: Pick<LifecycleHooks, "tool:pre" | "tool:post">;
  readonly permissions: PermissionController | undefined;
  readonly limits: ResolvedLimits;
  /** The engine's clock: a resolver's timeout, a handler's `now`. */
  readonly clock: Clock;
  readonly sessionId: string;
  readonly facts: JsonObject | undefined;
  /** A main step's ask parks the turn (durable asks) instead of waiting for the resolver. */
  readonly park: boolean;
  /**
   * Runs a step's calls (`dispatchCalls`), handed down so that a delegate's handler can run its
   * own calls without the dispatch importing itself back through the gateways.
   */
  readonly dispatch: (
    run: ToolRun,
    calls: readonly StreamToolCall[],
    opts: DispatchOptions,
  ) => Promise<ToolResultBlock[]>;
}

export interface DispatchOptions {
  /** Calls at this index or later exceed `maxToolCalls`: their intent is recorded, nothing else. */
  readonly overBudgetFrom: number;
  readonly depth: number;
  /** The tools this caller may run (the turn's grant, or a delegate's narrowed one). */
  readonly grant: ReadonlyMap<string, ToolDefinition>;
  /** The caller's sensitivity: what its handlers' children may not exceed. */
  readonly sensitivity: Sensitivity;
  /** The caller's signal (the turn's, or a child's). */
  readonly signal: AbortSignal;
}
