import {
  type JsonSchema,
  MODEL_JOB_MAX_ITEMS,
  type ModelRequest,
  type Msg,
  normalizeIntent,
  normalizeTemperature,
  type RoutingIntent,
  type Scope,
  snapshot,
  type TextBlock,
  ValidationError,
  validateCustomId,
  validateId,
} from "@alma-harness/core";
import { normalizeMessages, scopeKey } from "@alma-harness/core/stores";
import { MixedTenantJobError } from "./errors.js";

/**
 * One item of a job as the host gives it: its own scope and session (the caller derived them from a
 * verified identity), its routing intent (tier and sensitivity: routed like any call), and the one
 * call's content. `maxOutputTokens` lowers the route's ceiling, never raises it.
 */
export interface ModelJobItemInput {
  readonly customId: string;
  readonly scope: Scope;
  readonly sessionId: string;
  readonly intent: RoutingIntent;
  readonly system?: string;
  readonly messages: readonly Msg[];
  readonly output?: { readonly name: string; readonly schema: JsonSchema };
  readonly temperature?: number;
  readonly maxOutputTokens?: number;
}

export interface ModelJobInput {
  /** The job's id, chosen by the host (1-64 of `[A-Za-z0-9_-]`): a retry under it never submits again. */
  readonly jobId: string;
  readonly items: readonly ModelJobItemInput[];
}

/** A job's input, validated and frozen: one scope, distinct custom ids, each item's content as a request draft. */
export interface CheckedJob {
  readonly jobId: string;
  readonly scope: Scope;
  readonly items: readonly CheckedItem[];
}

export interface CheckedItem {
  readonly customId: string;
  readonly sessionId: string;
  readonly intent: RoutingIntent;
  readonly draft: Omit<ModelRequest, "model" | "maxOutputTokens">;
  readonly maxOutputTokens?: number;
}

const JOB_FIELDS = new Set(["jobId", "items"]);
const ITEM_FIELDS = new Set([
  "customId",
  "scope",
  "sessionId",
  "intent",
  "system",
  "messages",
  "output",
  "temperature",
  "maxOutputTokens",
]);
/** A job's content is bounded as a turn's input is: 64 levels, and at most 32 MiB of text in all. */
const LIMITS = Object.freeze({
  maxDepth: 64,
  maxNodes: 2_000_000,
  maxTotalBytes: 32 * 1024 * 1024,
});

function fields(
  path: string,
  value: unknown,
  allowed: ReadonlySet<string>,
): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new ValidationError(path, "object", `${path} must be an object`);
  for (const key of Object.keys(value))
    if (!allowed.has(key))
      throw new ValidationError(`${path}.${key}`, "unknown_field", `${path}.${key} is not a field`);
  return value as Record<string, unknown>;
}

function checkItem(
  path: string,
  raw: unknown,
): { readonly scope: Scope; readonly key: string; readonly item: CheckedItem } {
  const o = fields(path, raw, ITEM_FIELDS);
  const { scope, key } = scopeKey(o.scope);
  const messages = normalizeMessages(o.messages);
  if (o.system !== undefined && (typeof o.system !== "string" || o.system.length === 0))
    throw new ValidationError(
      `${path}.system`,
      "string",
      `${path}.system must be a non-empty string`,
    );
  const system: readonly TextBlock[] =
    o.system === undefined ? [] : [{ type: "text", text: o.system }];
  let output: ModelRequest["output"];
  if (o.output !== undefined) {
    const out = fields(`${path}.output`, o.output, new Set(["name", "schema"]));
    if (out.schema === null || typeof out.schema !== "object" || Array.isArray(out.schema))
      throw new ValidationError(`${path}.output.schema`, "object", "an output schema is an object");
    output = {
      name: validateId(`${path}.output.name`, out.name),
      schema: out.schema as JsonSchema,
    };
  }
  const temperature = normalizeTemperature(o.temperature);
  if (
    o.maxOutputTokens !== undefined &&
    (!Number.isSafeInteger(o.maxOutputTokens) || (o.maxOutputTokens as number) < 1)
  ) {
    throw new ValidationError(
      `${path}.maxOutputTokens`,
      "positive_integer",
      `${path}.maxOutputTokens must be a positive integer`,
    );
  }
  const draft: CheckedItem["draft"] = Object.freeze({
    system,
    messages,
    tools: [],
    ...(output ? { output } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
  });
  const item: CheckedItem = Object.freeze({
    customId: validateCustomId(`${path}.customId`, o.customId),
    sessionId: validateId(`${path}.sessionId`, o.sessionId),
    intent: normalizeIntent(o.intent, `${path}.intent`),
    draft,
    ...(o.maxOutputTokens !== undefined ? { maxOutputTokens: o.maxOutputTokens as number } : {}),
  });
  return { scope, key, item };
}

/**
 * The job's input checked before any I/O: plain bounded JSON read once (no getter runs, a Proxy is
 * refused), 1 to `MODEL_JOB_MAX_ITEMS` items with distinct custom ids, and one scope for the whole
 * job: an item of another tenant (or another scope of the same tenant) is a `MixedTenantJobError`.
 */
export function checkJob(input: unknown): CheckedJob {
  const o = fields("job", snapshot(input, LIMITS), JOB_FIELDS);
  const jobId = validateCustomId("job.jobId", o.jobId);
  if (!Array.isArray(o.items) || o.items.length < 1 || o.items.length > MODEL_JOB_MAX_ITEMS) {
    throw new ValidationError(
      "job.items",
      "items_1_max",
      `a job has 1-${MODEL_JOB_MAX_ITEMS} items`,
    );
  }
  const checked = o.items.map((raw, i) => checkItem(`job.items[${i}]`, raw));
  const first = checked[0] as (typeof checked)[number];
  for (const [i, c] of checked.entries()) {
    if (c.key !== first.key)
      throw new MixedTenantJobError(
        `job.items[${i}]`,
        c.scope.org === first.scope.org ? "scope" : "tenant",
      );
  }
  const items = checked.map((c) => c.item);
  if (new Set(items.map((i) => i.customId)).size !== items.length)
    throw new ValidationError(
      "job.items",
      "distinct_custom_ids",
      "a job's custom ids must be distinct",
    );
  return Object.freeze({ jobId, scope: first.scope, items: Object.freeze(items) });
}
