import type { Msg } from "./messages.js";
import type { ModelRequest, StopReason, ToolChoice } from "./model.js";
import type { ModelChoice, RoutingIntent } from "./routing.js";
import type { JsonObject, JsonValue } from "./snapshot.js";
import type { ToolSpec } from "./tools.js";

/**
 * The closed set of lifecycle seams. Hooks only narrow: every input is a frozen snapshot, a hook
 * that throws makes the turn uncertain, and whatever a hook returns beyond what its seam allows is
 * refused and recorded on the context trail (shape only, never schema content).
 */
export const HOOK_NAMES = [
  "turn:start",
  "step:pre",
  "step:post",
  "tool:pre",
  "tool:post",
  "turn:end",
] as const;
export type HookName = (typeof HOOK_NAMES)[number];

export interface TurnStartInput {
  readonly turnId: string;
  readonly sessionId: string;
  readonly intent: RoutingIntent;
  readonly input: readonly Msg[];
}

export interface StepPreInput {
  readonly turnId: string;
  readonly step: number;
  readonly choice: ModelChoice;
  readonly request: ModelRequest;
}

/**
 * What `step:pre` may return. Only `maxOutputTokens` lower than the pinned ceiling is honored; every
 * other field is an attempt to widen and is refused (recorded, not applied).
 */
export interface StepPrePatch {
  readonly maxOutputTokens?: number;
  readonly model?: string;
  readonly clientId?: string;
  readonly tools?: readonly ToolSpec[];
  readonly output?: JsonValue;
  readonly toolChoice?: ToolChoice | null;
  readonly temperature?: number | null;
  readonly cache?: JsonValue;
  readonly reasoning?: string;
}

export interface StepPostInput {
  readonly turnId: string;
  readonly step: number;
  readonly stopReason: StopReason;
  readonly text: string;
  readonly toolCalls: readonly { readonly id: string; readonly name: string }[];
}

export interface ToolPreInput {
  readonly turnId: string;
  readonly callId: string;
  readonly name: string;
  readonly input: JsonObject;
}

/** `tool:pre` may deny a call (an error observation the model reads), never allow one policy denied. */
export interface ToolPreVerdict {
  readonly deny?: string;
}

export interface ToolPostInput {
  readonly turnId: string;
  readonly callId: string;
  readonly name: string;
  readonly output: JsonValue;
  readonly isError: boolean;
}

export interface TurnEndInput {
  readonly turnId: string;
  readonly sessionId: string;
  readonly outcome: "completed" | "reconciliation_required";
  readonly stopReason?: StopReason;
}

type MaybePromise<T> = T | Promise<T>;

export interface LifecycleHooks {
  readonly "turn:start"?: (input: TurnStartInput) => MaybePromise<void>;
  readonly "step:pre"?: (input: StepPreInput) => MaybePromise<StepPrePatch | undefined>;
  readonly "step:post"?: (input: StepPostInput) => MaybePromise<void>;
  readonly "tool:pre"?: (input: ToolPreInput) => MaybePromise<ToolPreVerdict | undefined>;
  readonly "tool:post"?: (input: ToolPostInput) => MaybePromise<void>;
  readonly "turn:end"?: (input: TurnEndInput) => MaybePromise<void>;
}
