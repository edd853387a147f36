import { ValidationError } from "./errors.js";

/** How capable a model a piece of work needs, cheapest first. */
export const TIERS = ["fast", "balanced", "deep"] as const;
export type Tier = (typeof TIERS)[number];

/**
 * How sensitive the data a call carries is, lowest to highest:
 * - `public`: may be published;
 * - `internal`: the tenant's business data, no personal data (the default ceiling of provider tools);
 * - `confidential`: personal data (a patient's record, an account);
 * - `restricted`: special-category data (health details, credentials) that only the most trusted
 *   route may see.
 * A child call's sensitivity is at most its parent's; nothing escalates.
 */
export const SENSITIVITIES = ["public", "internal", "confidential", "restricted"] as const;
export type Sensitivity = (typeof SENSITIVITIES)[number];

export function sensitivityRank(s: Sensitivity): number {
  return SENSITIVITIES.indexOf(s);
}

export function isTier(value: unknown): value is Tier {
  return typeof value === "string" && (TIERS as readonly string[]).includes(value);
}

export function isSensitivity(value: unknown): value is Sensitivity {
  return typeof value === "string" && (SENSITIVITIES as readonly string[]).includes(value);
}

export interface RoutingIntent {
  readonly tier: Tier;
  readonly sensitivity: Sensitivity;
  /** A short label of the work ("front-desk", "summary"); routing input, never content. */
  readonly task?: string;
  /** Asked again before a call's second and later attempts (spec: retry-routing): the attempt's number, from 2. */
  readonly attempt?: number;
  /** With `attempt`: the cause of the attempt before (an `UncertainCause`, such as `call:main:aborted`). */
  readonly previousCause?: string;
}

export type ReasoningEffort = "low" | "medium" | "high";
export type CacheTtl = "5m" | "1h";
export type ServiceTier = "standard" | "priority" | "flex" | "batch";

/** What the policy picked: a client (by id), a model, and the controls that go with it. */
export interface ModelChoice {
  readonly clientId: string;
  readonly model: string;
  readonly reasoning?: ReasoningEffort;
  readonly maxOutputTokens: number;
  /**
   * Prompt-cache duration for adapters that support explicit breakpoints; `false` disables them.
   * `tailTtl` (default `ttl`) is the moving conversation tail's own duration (`5m` under `1h`).
   */
  readonly cache: { readonly ttl: CacheTtl; readonly tailTtl?: CacheTtl } | false;
  readonly serviceTier?: ServiceTier;
}

/**
 * The routing policy. `resolve` is synchronous and pure: it receives a copied intent, returns the
 * choice, and throws to refuse (the turn is then `not_admitted`, before any claim).
 */
export interface ModelPolicy {
  resolve(intent: RoutingIntent): ModelChoice;
}

export function normalizeIntent(intent: unknown, path = "intent"): RoutingIntent {
  if (intent === null || typeof intent !== "object" || Array.isArray(intent)) {
    throw new ValidationError(
      path,
      "object",
      `${path} must be an object {tier, sensitivity, task?}`,
    );
  }
  const raw = readFields(intent, ["tier", "sensitivity", "task"], path, "an intent");
  const { tier, sensitivity, task } = raw;
  if (!isTier(tier))
    throw new ValidationError(
      `${path}.tier`,
      "closed",
      `${path}.tier must be one of ${TIERS.join(", ")}`,
    );
  if (!isSensitivity(sensitivity)) {
    throw new ValidationError(
      `${path}.sensitivity`,
      "closed",
      `${path}.sensitivity must be one of ${SENSITIVITIES.join(", ")}`,
    );
  }
  if (task !== undefined && (typeof task !== "string" || task.length < 1 || task.length > 64)) {
    throw new ValidationError(
      `${path}.task`,
      "string_1_64",
      `${path}.task must be 1-64 characters`,
    );
  }
  return Object.freeze({
    tier,
    sensitivity,
    ...(task !== undefined ? { task: task as string } : {}),
  });
}

/**
 * Reads each own enumerable field once (so a getter cannot show the check one value and the copy
 * another) and rejects any field not in `allowed`.
 */
function readFields(
  value: object,
  allowed: readonly string[],
  path: string,
  what: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key))
      throw new ValidationError(
        `${path}.${key}`,
        "unknown_field",
        `${path}.${key} is not a field of ${what}`,
      );
    out[key] = (value as Record<string, unknown>)[key];
  }
  return out;
}

const CHOICE_FIELDS = [
  "clientId",
  "model",
  "reasoning",
  "maxOutputTokens",
  "cache",
  "serviceTier",
] as const;

/** Validates a policy's answer; a malformed choice refuses the turn like a throw would. */
export function normalizeModelChoice(choice: unknown): ModelChoice {
  if (choice === null || typeof choice !== "object")
    throw new ValidationError("choice", "object", "the policy must return a ModelChoice");
  const c = readFields(choice, CHOICE_FIELDS, "choice", "a ModelChoice");
  const { clientId, model, maxOutputTokens, reasoning, serviceTier } = c;
  if (typeof clientId !== "string" || clientId.length === 0)
    throw new ValidationError("choice.clientId", "string", "choice.clientId is required");
  if (typeof model !== "string" || model.length === 0)
    throw new ValidationError("choice.model", "string", "choice.model is required");
  if (
    typeof maxOutputTokens !== "number" ||
    !Number.isSafeInteger(maxOutputTokens) ||
    maxOutputTokens < 1
  ) {
    throw new ValidationError(
      "choice.maxOutputTokens",
      "positive_integer",
      "choice.maxOutputTokens must be a positive integer",
    );
  }
  const cache = cacheChoice(c.cache);
  if (
    reasoning !== undefined &&
    reasoning !== "low" &&
    reasoning !== "medium" &&
    reasoning !== "high"
  ) {
    throw new ValidationError(
      "choice.reasoning",
      "closed",
      "choice.reasoning must be low, medium or high",
    );
  }
  if (
    serviceTier !== undefined &&
    serviceTier !== "standard" &&
    serviceTier !== "priority" &&
    serviceTier !== "flex" &&
    serviceTier !== "batch"
  ) {
    throw new ValidationError(
      "choice.serviceTier",
      "closed",
      "choice.serviceTier must be standard, priority, flex or batch",
    );
  }
  return Object.freeze({
    clientId,
    model,
    maxOutputTokens,
    cache,
    ...(reasoning !== undefined ? { reasoning } : {}),
    ...(serviceTier !== undefined ? { serviceTier } : {}),
  });
}

/**
 * A choice's cache: `false`, or the prefix's duration and optionally the tail's, never longer than
 * the prefix's. A tail equal to the prefix is dropped, so one setting has one spelling.
 */
function cacheChoice(
  value: unknown,
): { readonly ttl: CacheTtl; readonly tailTtl?: CacheTtl } | false {
  if (value === false) return false;
  if (value === null || typeof value !== "object") {
    throw new ValidationError(
      "choice.cache",
      "closed",
      'choice.cache must be false or {ttl: "5m" | "1h", tailTtl?}',
    );
  }
  const { ttl, tailTtl } = readFields(
    value,
    ["ttl", "tailTtl"],
    "choice.cache",
    "the cache choice",
  );
  if (ttl !== "5m" && ttl !== "1h")
    throw new ValidationError(
      "choice.cache",
      "closed",
      'choice.cache must be false or {ttl: "5m" | "1h", tailTtl?}',
    );
  if (tailTtl !== undefined && tailTtl !== "5m" && tailTtl !== "1h")
    throw new ValidationError(
      "choice.cache.tailTtl",
      "closed",
      'choice.cache.tailTtl must be "5m" or "1h"',
    );
  if (ttl === "5m" && tailTtl === "1h")
    throw new ValidationError(
      "choice.cache.tailTtl",
      "ordering",
      "a 1h tail cannot follow a 5m prefix",
    );
  return Object.freeze({
    ttl,
    ...(tailTtl !== undefined && tailTtl !== ttl ? { tailTtl } : {}),
  });
}
