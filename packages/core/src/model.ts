import { ValidationError } from "./errors.js";
import type { Msg, ProviderToolCallBlock, ProviderToolResultBlock, TextBlock } from "./messages.js";
import type { CacheTtl, ReasoningEffort, Sensitivity, ServiceTier } from "./routing.js";
import type { JsonSchema } from "./json-schema.js";
import type { ProviderToolSpec, ToolSpec } from "./tools.js";
import type { Usage, UsageEvidence } from "./usage.js";

/** Neutral stop reasons; an unknown provider reason is kept verbatim rather than guessed. */
export type KnownStopReason =
  | "end_turn"
  | "tool_use"
  | "max_tokens"
  | "stop_sequence"
  | "pause_turn"
  | "refusal"
  | "context_window_exceeded";
export type StopReason = KnownStopReason | (string & { readonly __unknownStopReason?: never });

/**
 * Why a provider refused (a `refusal` stop), as a closed vocabulary a host can show and a trail can
 * keep: Anthropic's `stop_details.category` values, and `unspecified` for a refusal without a
 * named category (OpenAI's refusal part, a null or unknown category). Never the provider's text.
 */
export type RefusalCategory =
  | "cyber"
  | "bio"
  | "frontier_llm"
  | "reasoning_extraction"
  | "general_harms"
  | "unspecified";
export const REFUSAL_CATEGORIES: readonly RefusalCategory[] = Object.freeze([
  "cyber",
  "bio",
  "frontier_llm",
  "reasoning_extraction",
  "general_harms",
  "unspecified",
]);

/** A provider's category as the closed vocabulary: an absent, null or unknown one is `unspecified`. */
export function refusalCategory(value: unknown): RefusalCategory {
  return typeof value === "string" && (REFUSAL_CATEGORIES as readonly string[]).includes(value)
    ? (value as RefusalCategory)
    : "unspecified";
}

export type ToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "none" }
  | { readonly type: "required" }
  | { readonly type: "tool"; readonly name: string };

export interface CacheControls {
  readonly ttl: CacheTtl;
  /** `false` keeps only the stable system prefix cached; default true (the conversation tail too). */
  readonly conversationTail?: boolean;
  /**
   * The TTL of the conversation-tail markers; default `ttl`. `5m` under `ttl: "1h"` keeps the
   * stable prefix for an hour while the moving tail is written at the 5-minute rate (each at its
   * own price row). A tail longer than the prefix (`5m` prefix, `1h` tail) breaks the provider's
   * ordering rule and is refused.
   */
  readonly tailTtl?: CacheTtl;
}

/**
 * One model call, provider-neutral. `tools` are the advertised function tools in a stable order
 * (a loaded deferred tool appended after those already advertised, in load order);
 * `deferredTools` is the grant's whole deferred set in registration order and `deferredToolSpecs`
 * their definitions in the same order (for native loading: an adapter that can send every
 * deferred definition marked as such, and answer a search with references, keeps its tools array
 * unchanged as tools load). A `search_tools` result's `loads` names what it loaded.
 */
export interface ModelRequest {
  readonly model: string;
  readonly system: readonly TextBlock[];
  readonly messages: readonly Msg[];
  readonly tools: readonly ToolSpec[];
  readonly providerTools?: readonly ProviderToolSpec[];
  readonly deferredTools?: readonly string[];
  readonly deferredToolSpecs?: readonly ToolSpec[];
  readonly output?: { readonly name: string; readonly schema: JsonSchema };
  readonly toolChoice?: ToolChoice;
  /** Finite 0..2; negative zero normalized; absent keeps the provider default. */
  readonly temperature?: number;
  readonly maxOutputTokens: number;
  /** Explicit cache breakpoints (Anthropic); `false` disables them. Other adapters reject it. */
  readonly cache?: CacheControls | false;
  readonly reasoning?: ReasoningEffort;
  readonly serviceTier?: ServiceTier;
  /**
   * The route's sensitivity, stamped by the governed call: an adapter whose wire routes data by
   * policy (OpenRouter) picks its data policy from it, and refuses in `validate` a sensitivity its
   * policy may not carry. Absent when a host calls a client directly.
   */
  readonly sensitivity?: Sensitivity;
  /**
   * A scoped, pseudonymous prompt-cache routing key (OpenAI `prompt_cache_key`), stamped by the
   * governed call from its `cacheKey` hook: 1-64 characters of `[A-Za-z0-9._:-]`, never a raw
   * tenant, user or session id. Adapters without such a key ignore it.
   */
  readonly cacheKey?: string;
}

/** A complete tool-call intention: `arguments` is the raw JSON text the model produced. */
export interface StreamToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/**
 * The neutral stream. Valid order: reasoning and text deltas, then complete tool calls (provider
 * tool blocks may interleave), usage evidence, and exactly one terminal `response_completed` whose
 * text and calls agree with what streamed. The first terminal frame ends pulling.
 */
export type ModelStreamEvent =
  | { readonly type: "text_delta"; readonly text: string }
  | {
      readonly type: "reasoning_delta";
      readonly text: string;
      readonly signature?: string;
      readonly redacted?: string;
    }
  | ({ readonly type: "tool_call" } & StreamToolCall)
  | ProviderToolCallBlock
  | ProviderToolResultBlock
  | { readonly type: "usage"; readonly evidence: UsageEvidence }
  | {
      readonly type: "response_completed";
      readonly stopReason: StopReason;
      readonly text: string;
      readonly toolCalls: readonly StreamToolCall[];
      readonly usage?: Usage;
      /** With a `refusal` stop: the closed category (absent reads as `unspecified`). */
      readonly refusal?: RefusalCategory;
    };

/** The version of the model seam below: bumped when its request, stream or error contract changes. */
export const MODEL_SPECIFICATION_VERSION = "alma-model-v1";

/**
 * The model seam. `validate` checks request support without I/O and throws `ProviderError`
 * (`unsupported`) for a control it cannot honor. `stream` dispatches once per call (a fresh call is
 * a fresh dispatch: the executor claims it durably first); it throws `ProviderError` before or
 * during the stream; the signal aborts the transport; `return()` on the iterator closes it.
 */
export interface ModelClient {
  /**
   * The version of this seam the client implements (`MODEL_SPECIFICATION_VERSION`). Absent means
   * the current one; a client built for another version is refused when the engine is built.
   */
  readonly specificationVersion?: typeof MODEL_SPECIFICATION_VERSION;
  readonly id: string;
  readonly provider: string;
  validate(request: ModelRequest): void;
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent>;
}

/** Validates and copies a tool choice's closed shape. */
export function normalizeToolChoice(choice: unknown): ToolChoice | undefined {
  if (choice === undefined) return undefined;
  if (choice === null || typeof choice !== "object")
    throw new ValidationError("toolChoice", "closed", "toolChoice must be an object");
  const c = choice as Record<string, unknown>;
  const keys = Object.keys(c);
  if (c.type === "auto" || c.type === "none" || c.type === "required") {
    if (keys.length !== 1)
      throw new ValidationError("toolChoice", "unknown_field", "toolChoice has unknown fields");
    return Object.freeze({ type: c.type });
  }
  if (c.type === "tool" && typeof c.name === "string" && keys.length === 2)
    return Object.freeze({ type: "tool", name: c.name });
  throw new ValidationError(
    "toolChoice",
    "closed",
    'toolChoice must be {type: "auto" | "none" | "required"} or {type: "tool", name}',
  );
}

/** Checks a `{type: "tool"}` choice names exactly one advertised tool. */
export function validateToolChoice(
  choice: ToolChoice | undefined,
  tools: readonly ToolSpec[],
): void {
  if (choice?.type !== "tool") return;
  const matches = tools.filter((t) => t.name === choice.name).length;
  if (matches !== 1) {
    throw new ValidationError(
      "toolChoice.name",
      matches === 0 ? "missing" : "ambiguous",
      `toolChoice names ${matches === 0 ? "no" : "more than one"} advertised tool "${choice.name}"`,
    );
  }
}

/** Finite 0..2; `-0` becomes `0`. */
export function normalizeTemperature(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > 2) {
    throw new ValidationError("temperature", "range", "temperature must be a finite number 0..2");
  }
  return value === 0 ? 0 : value;
}
