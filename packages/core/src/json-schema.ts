import { Ajv, type ValidateFunction } from "ajv";
import { ValidationError } from "./errors.js";
import { deepFreeze } from "./freeze.js";
import type { JsonObject, JsonValue } from "./snapshot.js";

/** A JSON Schema object, as sent on the wire to providers. */
export type JsonSchema = JsonObject;

/**
 * A Standard Schema (zod 4, valibot, arktype…) that can also describe itself as JSON Schema
 * (`~standard.jsonSchema`, the Standard JSON Schema interface). Alma converts it once, at
 * registration, asking for draft-07 (the dialect the validator checks), and validates calls
 * against that JSON Schema, so the wire and the check agree.
 */
export interface StandardJsonSchemaLike {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly jsonSchema?: {
      readonly input: (options: { readonly target: string }) => Record<string, unknown>;
    };
  };
}

export type SchemaInput = JsonSchema | StandardJsonSchemaLike;

export interface CompiledSchema {
  readonly schema: JsonSchema;
  /** Returns `undefined` when valid, else the first problem as `path: message`. */
  check(value: JsonValue): string | undefined;
}

// `addUsedSchema: false`: a schema's `$id` is not registered globally, so two tools (or the same
// tool defined twice) may carry the same `$id`.
const ajv = new Ajv({
  strict: false,
  allErrors: false,
  validateFormats: false,
  addUsedSchema: false,
});

function isStandard(input: SchemaInput): input is StandardJsonSchemaLike {
  return typeof input === "object" && input !== null && "~standard" in input;
}

/** Converts and compiles a schema once. Throws `ValidationError` naming `path` when it cannot. */
export function compileSchema(input: SchemaInput, path: string): CompiledSchema {
  let raw: unknown = input;
  if (isStandard(input)) {
    const convert = input["~standard"].jsonSchema?.input;
    if (typeof convert !== "function") {
      throw new ValidationError(
        path,
        "json_schema",
        `${path}: this Standard Schema cannot describe itself as JSON Schema`,
      );
    }
    try {
      raw = convert({ target: "draft-07" });
    } catch (error) {
      throw new ValidationError(
        path,
        "json_schema",
        `${path}: the Standard Schema could not convert itself (${(error as Error)?.message ?? error})`,
      );
    }
  }
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
  return {
    schema: frozen,
    check(value) {
      if (validate(value)) return undefined;
      const first = validate.errors?.[0];
      return first
        ? `${first.instancePath || "(input)"} ${first.message ?? "is invalid"}`
        : "is invalid";
    },
  };
}
