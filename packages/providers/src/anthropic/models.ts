/** What an Anthropic model accepts, where the API differs by model generation. */
export interface AnthropicModelTraits {
  /** `adaptive` thinking steered by `output_config.effort` (Opus 4.7+, 5.x, Fable) or a `budget`. */
  readonly thinking: "adaptive" | "budget";
  /** `one`: the model accepts only temperature 1 (models released after Opus 4.6). */
  readonly temperature: "any" | "one";
  /** Forced tool use (`tool_choice` any/tool); refused by Opus 5.5, Sonnet 5.5 and Fable 5.1+. */
  readonly forcedToolChoice: boolean;
  /**
   * Deferred loading (`defer_loading` tools and `tool_reference` blocks): Sonnet, Opus and Haiku
   * 4.5 and later, every 5.x, Fable and Mythos (tool-search-tool, "Model compatibility").
   */
  readonly toolSearch: boolean;
  /**
   * Native JSON output (`output_config.format`, structured-outputs): Opus 4.1 and later, Sonnet and
   * Haiku 4.5 and later, every Opus/Sonnet/Haiku 5.x (reference/provider-wire.md §1.7). Not
   * assumed for Fable and Mythos, nor for an unknown id: a host whose model has it says so with
   * `createAnthropicClient({models})`. Without it, `validate` refuses an output schema before any I/O.
   */
  readonly structuredOutput: boolean;
}

const NAMED = /^claude-(opus|sonnet|haiku|fable|mythos)-(\d+)(?:-(\d{1,2}))?(?:-|$|\[)/;

/**
 * Traits from the model id, by the generation rules in the provider's migration notes (see
 * `reference/provider-wire.md` §1.1, §1.4, §1.6). Unknown ids get the conservative older
 * behaviour; a host overrides per model with `createAnthropicClient({models})`.
 */
export function defaultAnthropicTraits(model: string): AnthropicModelTraits {
  const match = NAMED.exec(model);
  if (!match)
    return {
      thinking: "budget",
      temperature: "any",
      forcedToolChoice: true,
      toolSearch: false,
      structuredOutput: false,
    };
  const family = match[1] ?? "";
  const version = Number(match[2]) + Number(match[3] ?? 0) / 10;
  const novel = family === "fable" || family === "mythos";
  const recent = novel || version >= 5 || (family === "opus" && version >= 4.7);
  const noForcing = (novel && version >= 5.1) || version >= 5.5;
  const structuredOutput = !novel && (version >= 4.5 || (family === "opus" && version >= 4.1));
  return {
    thinking: recent ? "adaptive" : "budget",
    temperature: recent ? "one" : "any",
    forcedToolChoice: !noForcing,
    toolSearch: novel || version >= 4.5,
    structuredOutput,
  };
}

/** Thinking budgets per neutral effort, capped to leave room for the answer within max_tokens. */
const BUDGETS = { low: 2048, medium: 8192, high: 24576 } as const;
export const MIN_THINKING_BUDGET = 1024;

export function thinkingBudget(effort: keyof typeof BUDGETS, maxOutputTokens: number): number {
  return Math.max(
    MIN_THINKING_BUDGET,
    Math.min(BUDGETS[effort], Math.floor(maxOutputTokens * 0.75)),
  );
}
