import {
  type ModelRequest,
  type Sensitivity,
  sensitivityRank,
  ValidationError,
} from "@alma-harness/core";
import { unsupported } from "../shared/errors.js";
import { OPENROUTER_PROVIDER } from "./provider.js";

/**
 * OpenRouter's provider-routing preferences (the request's `provider` object), the subset a
 * governed runtime sets: where a prompt may go and whether OpenRouter may fall back elsewhere.
 * Field names are the wire's (openrouter.ai/docs/features/provider-routing). OpenRouter's own
 * default is `data_collection: "allow"` (upstreams that may store and train on prompts) with
 * fallbacks on.
 */
export interface OpenRouterProviderPreferences {
  /** Only zero-data-retention endpoints. */
  readonly zdr?: boolean;
  /** `deny`: only upstreams that do not collect user data. */
  readonly data_collection?: "allow" | "deny";
  /** Upstream slugs to try, in order. */
  readonly order?: readonly string[];
  /** Only these upstream slugs. */
  readonly only?: readonly string[];
  /** Never these upstream slugs. */
  readonly ignore?: readonly string[];
  /** `false`: no upstream outside `order` / `only`; the upstream error is returned instead. */
  readonly allow_fallbacks?: boolean;
  /** Only upstreams that support every parameter sent. */
  readonly require_parameters?: boolean;
}

/** What a per-call preference sees: the model and the route's sensitivity (absent outside the governed call). */
export interface OpenRouterCall {
  readonly model: string;
  readonly sensitivity?: Sensitivity;
}

/** A preference for every call of the client, or one chosen per call. */
export type OpenRouterRouting =
  | OpenRouterProviderPreferences
  | ((call: OpenRouterCall) => OpenRouterProviderPreferences | undefined);

const KEYS = new Set([
  "zdr",
  "data_collection",
  "order",
  "only",
  "ignore",
  "allow_fallbacks",
  "require_parameters",
]);
const SLUG = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$/;
const MAX_SLUGS = 32;

/** Checks and copies a preference object; anything else is a `ValidationError`. */
export function normalizePreferences(
  value: unknown,
  path = "providerRouting",
): OpenRouterProviderPreferences {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new ValidationError(path, "object", `${path} must be an object`);
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v))
    if (!KEYS.has(key))
      throw new ValidationError(
        `${path}.${key}`,
        "unknown_field",
        `${path}.${key} is not an OpenRouter routing field`,
      );
  const out: Record<string, unknown> = {};
  for (const key of ["zdr", "allow_fallbacks", "require_parameters"] as const) {
    if (v[key] === undefined) continue;
    if (typeof v[key] !== "boolean")
      throw new ValidationError(`${path}.${key}`, "boolean", `${path}.${key} must be a boolean`);
    out[key] = v[key];
  }
  if (v.data_collection !== undefined) {
    if (v.data_collection !== "allow" && v.data_collection !== "deny")
      throw new ValidationError(
        `${path}.data_collection`,
        "closed",
        `${path}.data_collection must be "allow" or "deny"`,
      );
    out.data_collection = v.data_collection;
  }
  for (const key of ["order", "only", "ignore"] as const) {
    const list = v[key];
    if (list === undefined) continue;
    if (
      !Array.isArray(list) ||
      list.length > MAX_SLUGS ||
      !list.every((s) => typeof s === "string" && SLUG.test(s))
    ) {
      throw new ValidationError(
        `${path}.${key}`,
        "slugs",
        `${path}.${key} must be at most ${MAX_SLUGS} provider slugs`,
      );
    }
    out[key] = Object.freeze([...list]);
  }
  return Object.freeze(out) as OpenRouterProviderPreferences;
}

/** Whether a preference keeps prompts away from upstreams that may store or train on them. */
export function protectsData(prefs: OpenRouterProviderPreferences | undefined): boolean {
  return prefs?.zdr === true || prefs?.data_collection === "deny";
}

/**
 * The preference of one call: the client's object, or what its function answers for this call.
 * Data above `internal` sensitivity needs `zdr: true` or `data_collection: "deny"` (else refused
 * before any I/O, `unsupported`): OpenRouter's default would let any upstream keep it.
 */
export function preferencesFor(
  routing: OpenRouterRouting | undefined,
  request: ModelRequest,
): OpenRouterProviderPreferences | undefined {
  let prefs: OpenRouterProviderPreferences | undefined;
  if (typeof routing === "function") {
    const call: OpenRouterCall = {
      model: request.model,
      ...(request.sensitivity !== undefined ? { sensitivity: request.sensitivity } : {}),
    };
    const answer = routing(call);
    try {
      prefs = answer === undefined ? undefined : normalizePreferences(answer);
    } catch (error) {
      throw unsupported(
        OPENROUTER_PROVIDER,
        `the per-call routing preference is invalid: ${(error as Error).message}`,
      );
    }
  } else prefs = routing;
  const sensitivity = request.sensitivity;
  if (
    sensitivity !== undefined &&
    sensitivityRank(sensitivity) > sensitivityRank("internal") &&
    !protectsData(prefs)
  ) {
    throw unsupported(
      OPENROUTER_PROVIDER,
      `${sensitivity} data needs an OpenRouter routing preference with zdr: true or data_collection: "deny"`,
    );
  }
  return prefs;
}

/** OpenRouter's display name of the serving upstream ("Google AI Studio") as a trail-safe slug ("google-ai-studio"). */
export function upstreamSlug(name: unknown): string | undefined {
  if (typeof name !== "string") return undefined;
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
  return slug.length > 0 ? slug : undefined;
}
