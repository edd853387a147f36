import type { JsonSchema, JsonValue } from "@alma-harness/core";

/**
 * Whether OpenAI's strict structured output can enforce a schema as it is (Structured Outputs,
 * "Supported schemas"; reference/provider-wire.md §2.1, §2.3): every object closes with
 * `additionalProperties: false` and lists every property in `required`, the root is an object and
 * not `anyOf`, at most 10 levels of nesting, and only the documented keywords appear. Such a schema
 * goes with `strict: true`, so the provider's decoder guarantees the shape; any other schema goes
 * without it (the answer is still validated by the caller), never rewritten behind the host's back.
 */
const KEYWORDS = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "anyOf",
  "description",
  "title",
  "$defs",
  "definitions",
  "$ref",
  "pattern",
  "format",
  "multipleOf",
  "maximum",
  "exclusiveMaximum",
  "minimum",
  "exclusiveMinimum",
  "minItems",
  "maxItems",
]);
const MAX_DEPTH = 10;

export function strictEligible(schema: JsonSchema): boolean {
  if (schema.type !== "object" || "anyOf" in schema) return false;
  return eligible(schema, 0);
}

function isObject(value: JsonValue | undefined): value is { readonly [key: string]: JsonValue } {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function eligible(node: JsonValue, depth: number): boolean {
  if (!isObject(node)) return false;
  if (depth > MAX_DEPTH) return false;
  for (const key of Object.keys(node)) if (!KEYWORDS.has(key)) return false;
  const properties = node.properties;
  if (node.type === "object" || properties !== undefined) {
    if (node.additionalProperties !== false || !isObject(properties)) return false;
    const required = Array.isArray(node.required) ? node.required : [];
    const names = Object.keys(properties);
    if (names.length !== required.length || names.some((n) => !required.includes(n))) return false;
    if (!names.every((n) => eligible(properties[n] as JsonValue, depth + 1))) return false;
  }
  if (node.items !== undefined && !eligible(node.items, depth + 1)) return false;
  if (
    node.anyOf !== undefined &&
    !(Array.isArray(node.anyOf) && node.anyOf.every((s) => eligible(s, depth + 1)))
  )
    return false;
  for (const defs of [node.$defs, node.definitions]) {
    if (
      defs !== undefined &&
      !(isObject(defs) && Object.values(defs).every((s) => eligible(s, depth + 1)))
    )
      return false;
  }
  return true;
}
