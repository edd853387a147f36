import {
  compileSchema,
  type CompiledSchema,
  type EpisodeStore,
  isTier,
  type ProfileStore,
  type Tier,
} from "@alma-harness/core";
import { EngineConfigError } from "./errors.js";

/**
 * Memory extraction (issue 18): after a completed turn (and at its rotation), one governed call on
 * its own route reads the turn's labelled transcript and answers a structured output (an episode
 * summary, profile facts with key, text and confidence); a valid answer is written through the
 * memory stores with the turn's sensitivity. Never for a delegate (only the main thread's turn
 * extracts), never in single-call. Its failure never changes the turn's outcome.
 */
export interface ExtractionConfig {
  /** The tier the call is routed on (`policy.resolve({ tier, sensitivity: <the turn's>, task: "extraction" })`). */
  readonly tier: Tier;
  readonly stores: { readonly episodes: EpisodeStore; readonly profiles: ProfileStore };
  /** Facts one extraction may write, 0–20; default 8. */
  readonly maxFacts?: number;
  /** The instruction (1–10,000 characters); default `EXTRACTION_INSTRUCTION`. */
  readonly instruction?: string;
}

/** What one extraction did, on the lifecycle trail (`memory.extraction`, detail `<outcome>:<episodes>:<facts>`). */
export type ExtractionOutcome = "stored" | "nothing" | "invalid" | "refused" | "no_call" | "failed";

export const EXTRACTION_INSTRUCTION = [
  "You maintain the memory of an assistant that talks with one person.",
  "Read the transcript of the latest turn and answer JSON only, matching the schema:",
  '- "episode": one or two sentences on what happened (what the person asked or told, what was done or agreed), or null when nothing is worth remembering;',
  '- "facts": durable facts about the person (allergies, conditions, preferences, names of their relatives), each with a stable lowercase "key" such as "allergy.penicillin",',
  '  the fact as a short sentence in "text", and your "confidence" from 0 to 1. A fact that changes an earlier one keeps its key.',
  "Lines in brackets come from the product's side (the team or an automatic notice), not from the person: learn from them only what they state about the person.",
  "Never invent facts; leave out what the person did not say or confirm.",
].join("\n");

const KEY_PATTERN = "^[a-z][a-z0-9_.-]{0,63}$";
/** The episode summary's and a fact's longest UTF-8 length. */
export const SUMMARY_MAX_BYTES = 4096;
export const FACT_MAX_BYTES = 1024;

export interface CompiledExtraction {
  readonly tier: Tier;
  readonly stores: ExtractionConfig["stores"];
  readonly maxFacts: number;
  readonly instruction: string;
  readonly schema: CompiledSchema;
}

function schemaFor(maxFacts: number): CompiledSchema {
  return compileSchema(
    {
      type: "object",
      additionalProperties: false,
      required: ["episode", "facts"],
      properties: {
        episode: { type: ["string", "null"], minLength: 1, maxLength: SUMMARY_MAX_BYTES },
        facts: {
          type: "array",
          maxItems: maxFacts,
          items: {
            type: "object",
            additionalProperties: false,
            required: ["key", "text", "confidence"],
            properties: {
              key: { type: "string", pattern: KEY_PATTERN },
              text: { type: "string", minLength: 1, maxLength: FACT_MAX_BYTES },
              confidence: { type: "number", minimum: 0, maximum: 1 },
            },
          },
        },
      },
    },
    "extraction.schema",
  );
}

/** Validates the extraction configuration once, at construction. */
export function compileExtraction(
  config: ExtractionConfig | undefined,
): CompiledExtraction | undefined {
  if (config === undefined) return undefined;
  if (config === null || typeof config !== "object" || !isTier(config.tier))
    throw new EngineConfigError("extraction needs a tier");
  const stores = config.stores;
  if (
    !stores ||
    typeof stores.episodes?.put !== "function" ||
    typeof stores.profiles?.put !== "function"
  )
    throw new EngineConfigError("extraction.stores must hold the episode and profile stores");
  const maxFacts = config.maxFacts ?? 8;
  if (!Number.isSafeInteger(maxFacts) || maxFacts < 0 || maxFacts > 20)
    throw new EngineConfigError("extraction.maxFacts must be an integer 0-20");
  const instruction = config.instruction ?? EXTRACTION_INSTRUCTION;
  if (typeof instruction !== "string" || instruction.length < 1 || instruction.length > 10_000)
    throw new EngineConfigError("extraction.instruction must be 1-10,000 characters");
  return Object.freeze({
    tier: config.tier,
    stores,
    maxFacts,
    instruction,
    schema: schemaFor(maxFacts),
  });
}
