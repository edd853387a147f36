import { Ajv, type ValidateFunction } from "ajv";
import { ValidationError } from "./errors.js";
import { deepFreeze } from "./freeze.js";
import type { JsonObject, JsonValue } from "./snapshot.js";
import {
  type InputCheck,
  isStandard,
  standardOf,
  type StandardJsonSchemaLike,
  standardToJsonSchema,
  standardValidate,
} from "./standard-schema.js";

export type { StandardJsonSchemaLike } from "./standard-schema.js";

/** A JSON Schema object, as sent on the wire to providers. */
export type JsonSchema = JsonObject;

export type SchemaInput = JsonSchema | StandardJsonSchemaLike;

export interface CompiledSchema {
  readonly schema: JsonSchema;
  /** Returns `undefined` when valid, else the first problem as `path: message`. */
  check(value: JsonValue): string | undefined;
  /**
   * The full check of a tool call's input: `check`, then, for a Standard Schema that validates, the
   * library's own `~standard.validate` (its refinements run; its output is the value). Synchronous
   * unless the library answers with a promise; throws only when the library's code throws.
   */
  validate(value: JsonObject): InputCheck | Promise<InputCheck>;
}

// `addUsedSchema: false`: a schema's `$id` is not registered globally, so two tools (or the same
// tool defined twice) may carry the same `$id`.
const ajv = new Ajv({
  strict: false,
  allErrors: false,
  validateFormats: false,
  addUsedSchema: false,
});

/** Converts and compiles a schema once. Throws `ValidationError` naming `path` when it cannot. */
export function compileSchema(input: SchemaInput, path: string): CompiledSchema {
  const standard = isStandard(input) ? standardOf(input, path) : undefined;
  const raw: unknown = standard ? standardToJsonSchema(standard, path) : input;
  let schema: JsonSchema;
  try {
    schema = JSON.parse(JSON.stringify(raw)) as JsonSchema;
  } catch {
    throw new ValidationError(path, "json_schema", `${path}: the schema is not JSON data`);
  }
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
    throw new ValidationError(
      path,
      "json_schema",
      `${path}: a tool input schema must be a JSON object`,
    );
  }
  const { $schema: _ignored, ...wire } = schema as Record<string, JsonValue>;
  if (wire.type !== "object") {
    throw new ValidationError(
      path,
      "json_schema",
      `${path}: a tool input schema must have type "object"`,
    );
  }
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(wire);
  } catch (error) {
    throw new ValidationError(
      path,
      "json_schema",
      `${path}: invalid JSON Schema (${(error as Error).message})`,
    );
  }
  const frozen = deepFreeze(wire) as JsonSchema;
  const check = (value: JsonValue): string | undefined => {
    if (validate(value)) return undefined;
    const first = validate.errors?.[0];
    return first
      ? `${first.instancePath || "(input)"} ${first.message ?? "is invalid"}`
      : "is invalid";
  };
  const library = typeof standard?.validate === "function" ? standard : undefined;
  return {
    schema: frozen,
    check,
    validate(value) {
      const problem = check(value);
      if (problem !== undefined) return { ok: false, problem };
      return library ? standardValidate(library, value) : { ok: true, value };
    },
  };
}
