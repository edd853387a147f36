import { ValidationError } from "./errors.js";
import {
  type CompiledSchema,
  compileSchema,
  type JsonSchema,
  type SchemaInput,
} from "./json-schema.js";
import type { Sensitivity } from "./routing.js";
import type { JsonObject, JsonValue } from "./snapshot.js";
import type { StandardInput, StandardOutput } from "./standard-schema.js";
import type { ToolContext } from "./tool-context.js";

/** Tool names: 1–64 of `[A-Za-z0-9_-]`; `__` separates a server prefix from the short name. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
export const DEFAULT_MAX_OUTPUT_CHARS = 16_000;
export const MAX_OUTPUT_CHARS_LIMIT = 1_000_000;
/** The engine's built-in deferred-tool search: privileged, never registrable by a host. */
export const SEARCH_TOOLS_NAME = "search_tools";

/** What a tool says it touches, for the access trail ("patients/123"); never the raw query. */
export interface ToolAccess {
  readonly resource: string;
}

/** The authorization intent a permission controller decides on. */
export interface AuthorizationIntent {
  readonly action: string;
  readonly subject: string;
}

/**
 * A registered tool's handler. It receives the checked input: for a JSON Schema the arguments
 * themselves, for a Standard Schema the library's output (`ToolConfig.handler` is typed by it).
 */
export type ToolHandler = (input: JsonObject, ctx: ToolContext) => unknown | Promise<unknown>;

/**
 * A tool's registration. `S` is its input schema: a JSON Schema object (the handler gets a
 * `JsonObject`) or a Standard Schema with Standard JSON Schema (zod 4, valibot through its
 * `toStandardJsonSchema`, arktype): `authorize` and `access` get its input type, the handler its
 * output type.
 */
export interface ToolConfig<S extends SchemaInput = SchemaInput> {
  readonly name: string;
  readonly description: string;
  readonly input: S;
  readonly maxOutputChars?: number;
  readonly deferred?: boolean;
  /** Derives the authorization intent; default `{action: name, subject: "*"}`. */
  readonly authorize?: (input: StandardInput<S>) => AuthorizationIntent;
  /** Declares the resource the call reads or writes, for the access trail. */
  readonly access?: (input: StandardInput<S>) => ToolAccess;
  /**
   * Declares that the authorization subject and the access resource this tool derives are not
   * sensitive (a catalog code, a public resource): the trails record them as they are, when they
   * are identifier-shaped. Default `false`: the trails record their keyed hash (HMAC with the
   * deployment's trail key), never the value, since a subject is often derived from what the model
   * or a person wrote (a patient's name).
   */
  readonly nonSensitiveTrail?: boolean;
  /**
   * Declares that running the handler twice with the same `ctx.effectKey` has the effect of running
   * it once (the tool makes its outside effect idempotent by that key). A turn whose process died
   * between the handler's start and its recorded result re-runs a replay-safe tool with the same
   * key; for any other tool it ends `reconciliation_required` and the handler never runs again.
   * Default `false`.
   */
  readonly replaySafe?: boolean;
  /**
   * Declares that the handler has no effect outside the process: it reads or computes, and what it
   * returns reaches anyone only through the turn's next model call (seed 004's "pure tool"). A pure
   * tool runs without a durability point of its own: its intent, decision, access record and result
   * commit with the next call's claim, in one transaction with the step's settlement (issue 26: a W2
   * turn in three commits), which is still before anything it read leaves the process. A process
   * that dies mid-handler leaves none of it, and the turn ends `reconciliation_required` as after a
   * crash mid-stream. Where a record of its step was written (a hook, a permission controller), a
   * resume runs it again, as a replay-safe tool. A tool that writes, sends or calls out (a gateway
   * included) is not pure. Default `false`: the intent and the decision are committed first.
   */
  readonly pure?: boolean;
  readonly handler: (input: StandardOutput<S>, ctx: ToolContext) => unknown | Promise<unknown>;
}

/** A registered tool: validated, its schema compiled once. Frozen. */
export interface ToolDefinition {
  readonly name: string;
  readonly shortName: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly validator: CompiledSchema;
  readonly maxOutputChars: number;
  readonly deferred: boolean;
  readonly authorize: (input: JsonObject) => AuthorizationIntent;
  readonly access?: (input: JsonObject) => ToolAccess;
  /** Whether the trails may record its subject and resource verbatim (see `ToolConfig.nonSensitiveTrail`). */
  readonly nonSensitiveTrail: boolean;
  /** Whether a run cut by a crash may run again with the same effect key (see `ToolConfig.replaySafe`). */
  readonly replaySafe: boolean;
  /** Whether the handler runs without a durability point of its own (see `ToolConfig.pure`). */
  readonly pure: boolean;
  readonly handler: ToolHandler;
}

/** What a model is offered on the wire for a function tool. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
}

export function validateToolName(name: unknown, path = "name"): string {
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw new ValidationError(
      path,
      "tool_name",
      `${path}: tool names are 1-64 characters of [A-Za-z0-9_-]`,
    );
  }
  return name;
}

export function shortToolName(name: string): string {
  const at = name.lastIndexOf("__");
  return at >= 0 && at + 2 < name.length ? name.slice(at + 2) : name;
}

/** Registers a tool. Throws `ValidationError` naming the tool and the field on bad configuration. */
export function defineTool<S extends SchemaInput>(config: ToolConfig<S>): ToolDefinition {
  if (config === null || typeof config !== "object")
    throw new ValidationError("tool", "object", "a tool must be an object");
  const name = validateToolName(config.name, "tool.name");
  const where = `tool "${name}"`;
  if (name === SEARCH_TOOLS_NAME)
    throw new ValidationError(`${where}.name`, "reserved", `${where}: search_tools is reserved`);
  if (
    typeof config.description !== "string" ||
    config.description.length === 0 ||
    config.description.length > 4096
  ) {
    throw new ValidationError(
      `${where}.description`,
      "string_1_4096",
      `${where}: description must be 1-4096 characters`,
    );
  }
  if (typeof config.handler !== "function") {
    throw new ValidationError(
      `${where}.handler`,
      "function",
      `${where}: handler must be a function`,
    );
  }
  const maxOutputChars = config.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  if (
    !Number.isSafeInteger(maxOutputChars) ||
    maxOutputChars < 1 ||
    maxOutputChars > MAX_OUTPUT_CHARS_LIMIT
  ) {
    throw new ValidationError(
      `${where}.maxOutputChars`,
      "range",
      `${where}: maxOutputChars must be an integer 1-${MAX_OUTPUT_CHARS_LIMIT}`,
    );
  }
  for (const key of ["authorize", "access"] as const) {
    if (config[key] !== undefined && typeof config[key] !== "function") {
      throw new ValidationError(
        `${where}.${key}`,
        "function",
        `${where}: ${key} must be a function`,
      );
    }
  }
  for (const key of ["nonSensitiveTrail", "replaySafe", "pure"] as const) {
    if (config[key] !== undefined && typeof config[key] !== "boolean") {
      throw new ValidationError(`${where}.${key}`, "boolean", `${where}: ${key} must be a boolean`);
    }
  }
  const validator = compileSchema(config.input, `${where}.input`);
  const definition: ToolDefinition = {
    name,
    shortName: shortToolName(name),
    description: config.description,
    inputSchema: validator.schema,
    validator,
    maxOutputChars,
    deferred: config.deferred === true,
    // The loop calls these with input `validator.validate` accepted: of the schema's input type, and
    // the handler with what it returned, of its output type; the definition forgets `S`.
    authorize: (config.authorize as ToolDefinition["authorize"] | undefined) ?? defaultIntent(name),
    ...(config.access ? { access: config.access as NonNullable<ToolDefinition["access"]> } : {}),
    nonSensitiveTrail: config.nonSensitiveTrail === true,
    replaySafe: config.replaySafe === true,
    pure: config.pure === true,
    handler: config.handler as ToolHandler,
  };
  return Object.freeze(definition);
}

function defaultIntent(name: string): ToolDefinition["authorize"] {
  return () => ({ action: name, subject: "*" });
}

export function toolSpec(tool: ToolDefinition): ToolSpec {
  return { name: tool.name, description: tool.description, inputSchema: tool.inputSchema };
}

const toolErrors = new WeakSet<object>();

/** An expected tool failure ("not found"): the result is the payload with `isError: true`. */
export interface ToolErrorValue {
  readonly payload: JsonValue;
}

/** Marks an expected failure. Recognized by identity only: an object with an `isError` field is ordinary output. */
export function toolError(payload: JsonValue): ToolErrorValue {
  const value = Object.freeze({ payload });
  toolErrors.add(value);
  return value;
}

export function isToolError(value: unknown): value is ToolErrorValue {
  return typeof value === "object" && value !== null && toolErrors.has(value);
}

/** A provider-executed tool (today `web_search`), declared on the request and run by the provider. */
export interface ProviderToolSpec {
  readonly kind: "web_search";
  /** The highest sensitivity a turn may have for this tool to be advertised. Default `internal`. */
  readonly maxSensitivity: Sensitivity;
  /** Per-turn cap the loop enforces on every provider. */
  readonly maxUses?: number;
}

export function defineProviderTool(spec: {
  kind: "web_search";
  maxSensitivity?: Sensitivity;
  maxUses?: number;
}): ProviderToolSpec {
  if (spec.kind !== "web_search")
    throw new ValidationError(
      "providerTool.kind",
      "closed",
      "the only provider tool kind is web_search",
    );
  if (
    spec.maxUses !== undefined &&
    (!Number.isSafeInteger(spec.maxUses) || spec.maxUses < 1 || spec.maxUses > 100)
  ) {
    throw new ValidationError("providerTool.maxUses", "range", "maxUses must be an integer 1-100");
  }
  return Object.freeze({
    kind: spec.kind,
    maxSensitivity: spec.maxSensitivity ?? "internal",
    ...(spec.maxUses !== undefined ? { maxUses: spec.maxUses } : {}),
  });
}
