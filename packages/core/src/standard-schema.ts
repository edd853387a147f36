import type { StandardJSONSchemaV1, StandardSchemaV1 } from "@standard-schema/spec";
import { ValidationError } from "./errors.js";
import type { JsonObject } from "./snapshot.js";

/**
 * A Standard Schema (zod 4, valibot, arktype…) that can also describe itself as JSON Schema
 * (`~standard.jsonSchema`, the Standard JSON Schema interface): each library's own converter.
 * `validate` is optional only for the converter-only form a host may hand-build; every schema
 * library's objects carry it, and with it the library's own checks (refinements) run on every call.
 */
export interface StandardJsonSchemaLike {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly jsonSchema?: {
      readonly input: (options: StandardJSONSchemaV1.Options) => Record<string, unknown>;
    };
    readonly validate?: StandardSchemaV1.Props["validate"];
    readonly types?: StandardSchemaV1.Types | undefined;
  };
}

/** A type the schema does not pin (a JSON Schema, an untyped Standard Schema) is a `JsonObject`. */
type Pinned<T> = unknown extends T ? JsonObject : T;

/** What a tool's `authorize` and `access` see: the arguments, of the schema's input type. */
export type StandardInput<S> = S extends { readonly "~standard": { readonly types?: infer T } }
  ? NonNullable<T> extends { readonly input: infer I }
    ? Pinned<I>
    : JsonObject
  : JsonObject;

/** What the handler receives: the library's output (defaults filled, transforms applied). */
export type StandardOutput<S> = S extends { readonly "~standard": { readonly types?: infer T } }
  ? NonNullable<T> extends { readonly output: infer O }
    ? Pinned<O>
    : JsonObject
  : JsonObject;

/** A call's input after the full check: the value the handler receives, or the first problem. */
export type InputCheck =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly problem: string };

type Fallback = (ctx: { readonly base: Record<string, unknown> }) => Record<string, unknown>;

const refuse =
  (code: string): Fallback =>
  () => {
    throw new Error(`arktype: "${code}" has no faithful JSON Schema`);
  };
const keepBase: Fallback = (ctx) => ctx.base;

/**
 * The library options that make a vendor's own converter strict, by vendor: a part it cannot
 * describe (a Date, a bigint, a symbol key, a custom type) is refused, never widened to `{}`; a
 * refinement that only narrows a described type (a predicate, a `check`) is left out of the wire
 * schema, since it runs at validation. zod 4 is strict by default (`unrepresentable: "throw"`,
 * refinements not on the wire). arktype's Standard JSON Schema widens by default, so every
 * fallback but the narrowing ones throws. valibot throws on every action it cannot convert, so its
 * validation-only actions are the ones ignored. Any other vendor's converter is taken as it is.
 */
const STRICT_OPTIONS: Readonly<Record<string, () => Record<string, unknown>>> = {
  arktype: () => ({
    fallback: {
      arrayObject: refuse("arrayObject"),
      arrayPostfix: refuse("arrayPostfix"),
      defaultValue: refuse("defaultValue"),
      domain: refuse("domain"),
      morph: refuse("morph"),
      patternIntersection: keepBase,
      predicate: keepBase,
      proto: refuse("proto"),
      symbolKey: refuse("symbolKey"),
      unit: refuse("unit"),
      date: refuse("date"),
    },
  }),
  valibot: () => ({ ignoreActions: ["check", "check_items", "partial_check", "raw_check"] }),
};

/** How a vendor's converter is pointed to, when a schema cannot describe itself. */
const CONVERTER_HINT: Readonly<Record<string, string>> = {
  valibot:
    ' (wrap it with valibot\'s own converter: toStandardJsonSchema from "@valibot/to-json-schema")',
};

/**
 * A schema's `~standard` properties, read once (a getter may build them). A getter that throws, or
 * properties that are not an object, refuse the schema at registration.
 */
export function standardOf(
  input: StandardJsonSchemaLike,
  path: string,
): StandardJsonSchemaLike["~standard"] {
  let standard: unknown;
  try {
    standard = input["~standard"];
  } catch {
    standard = undefined;
  }
  if (typeof standard !== "object" || standard === null)
    throw new ValidationError(path, "json_schema", `${path}: ~standard is not a Standard Schema's`);
  return standard as StandardJsonSchemaLike["~standard"];
}

/** Whether `input` carries `~standard`; an arktype type is a function that does. */
export function isStandard(input: unknown): input is StandardJsonSchemaLike {
  return (
    (typeof input === "object" || typeof input === "function") &&
    input !== null &&
    "~standard" in input
  );
}

/**
 * Converts a Standard Schema to JSON Schema once, with the library's own converter, asking for
 * draft-07 (the dialect the validator checks) and the vendor's strict options. Throws
 * `ValidationError` naming `path` when the library cannot describe it faithfully.
 */
export function standardToJsonSchema(
  standard: StandardJsonSchemaLike["~standard"],
  path: string,
): unknown {
  const vendor = String(standard.vendor);
  const convert = standard.jsonSchema?.input;
  if (typeof convert !== "function") {
    throw new ValidationError(
      path,
      "json_schema",
      `${path}: this Standard Schema (${vendor}) cannot describe itself as JSON Schema${CONVERTER_HINT[vendor] ?? ""}`,
    );
  }
  const strict = Object.hasOwn(STRICT_OPTIONS, vendor) ? STRICT_OPTIONS[vendor] : undefined;
  try {
    return convert({
      target: "draft-07",
      ...(strict ? { libraryOptions: strict() } : {}),
    });
  } catch (error) {
    throw new ValidationError(
      path,
      "json_schema",
      `${path}: the ${vendor} schema cannot be described faithfully as JSON Schema (${(error as Error)?.message ?? error})`,
    );
  }
}

const MAX_PROBLEM_CHARS = 300;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/** The first issue as `path: message`, bounded. */
function problemOf(issues: ReadonlyArray<StandardSchemaV1.Issue>): string {
  const first = issues[0];
  const segments = (first?.path ?? []).map((segment) =>
    String(typeof segment === "object" && segment !== null ? segment.key : segment),
  );
  const where = segments.length > 0 ? `/${segments.join("/")}` : "(input)";
  const text = `${where} ${String(first?.message ?? "is invalid")}`;
  return text.length > MAX_PROBLEM_CHARS ? `${text.slice(0, MAX_PROBLEM_CHARS)}…` : text;
}

function checkOf(result: unknown): InputCheck {
  if (typeof result !== "object" || result === null)
    throw new TypeError("the schema's ~standard.validate returned no result object");
  const { issues } = result as StandardSchemaV1.Result<unknown>;
  if (issues) {
    if (!Array.isArray(issues) || issues.length === 0)
      throw new TypeError("the schema's ~standard.validate returned malformed issues");
    return { ok: false, problem: problemOf(issues) };
  }
  if (!("value" in result))
    throw new TypeError("the schema's ~standard.validate returned neither value nor issues");
  return { ok: true, value: (result as { value: unknown }).value };
}

/**
 * The library's own validation of input the JSON Schema already accepted: its refinements run,
 * and its output (defaults, transforms) is what the handler gets. Synchronous when the library
 * answers synchronously. A throw of the library's code, or a result outside the Standard Schema
 * shape, throws: that is the tool's code failing, not the model's input.
 */
export function standardValidate(
  standard: StandardJsonSchemaLike["~standard"],
  value: JsonObject,
): InputCheck | Promise<InputCheck> {
  // Called as a method: a library's `validate` may read its own `this`.
  const result = standard.validate?.(value);
  return isThenable(result) ? Promise.resolve(result).then(checkOf) : checkOf(result);
}
