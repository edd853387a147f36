import { hash } from "node:crypto";
import {
  type CompiledSchema,
  canonicalJson,
  compileSchema,
  dataFields,
  type JsonObject,
  type JsonSchema,
  type JsonValue,
  type Msg,
  normalizeIntent,
  normalizeScope,
  normalizeTemperature,
  normalizeToolChoice,
  type RoutingIntent,
  type Scope,
  snapshot,
  TOOL_NAME,
  type ToolChoice,
  type ToolSpec,
  ValidationError,
  validateId,
  validateToolChoice,
} from "@alma-harness/core";

/** One message of a single call: text only (a single call sends no media and replays no tool history). */
export interface StepMessage {
  readonly role: "user" | "assistant";
  readonly text: string;
}

/**
 * One governed structured call. `prompt` (one user message) or `messages` (text, alternating as
 * the host needs, the last one the user's), never both. `output` is the JSON Schema the answer
 * must satisfy (an object schema; native structured output where the adapter supports it).
 * `tools` are advertised only so `toolChoice` can force one (the answer is then that call's
 * arguments); a single call never runs a tool.
 */
export interface StepRequest {
  readonly scope: Scope;
  readonly idempotencyKey: string;
  readonly intent: RoutingIntent;
  /** The session the call serves, if any: its spend counts there, and erasing the session erases the stored result. */
  readonly sessionId?: string;
  readonly system?: string;
  readonly prompt?: string;
  readonly messages?: readonly StepMessage[];
  readonly output: { readonly name: string; readonly schema: JsonSchema };
  readonly tools?: readonly ToolSpec[];
  readonly toolChoice?: ToolChoice;
  /** Finite 0..2 (negative zero is 0); absent keeps the provider default. */
  readonly temperature?: number;
  /** Lowers the route's output ceiling for this call; never raises it. */
  readonly maxOutputTokens?: number;
  /** Execution cancellation: a call already sent is then `reconciliation_required`. */
  readonly signal?: AbortSignal;
}

/** A request validated and copied once, with the schema compiled and its identity derived. */
export interface NormalizedStep {
  readonly scope: Scope;
  readonly idempotencyKey: string;
  readonly intent: RoutingIntent;
  readonly sessionId: string | undefined;
  readonly system: string | undefined;
  readonly messages: readonly Msg[];
  readonly output: { readonly name: string; readonly schema: JsonSchema };
  readonly compiled: CompiledSchema;
  readonly tools: readonly ToolSpec[];
  readonly toolChoice: ToolChoice | undefined;
  readonly temperature: number | undefined;
  readonly maxOutputTokens: number | undefined;
  readonly signal: AbortSignal | undefined;
  /** What the binding hashes: everything a retry under the same key must repeat. */
  readonly bound: JsonObject;
}

const FIELDS = [
  "scope",
  "idempotencyKey",
  "intent",
  "sessionId",
  "system",
  "prompt",
  "messages",
  "output",
  "tools",
  "toolChoice",
  "temperature",
  "maxOutputTokens",
  "signal",
];
const MAX_MESSAGES = 64;
const MAX_TOOLS = 64;
const OUTPUT_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Compiled schemas by their canonical JSON, so a host that asks with the same schema every time
 * (the usual case) compiles it once, not per call. Bounded: the oldest entry leaves first.
 */
const COMPILED = new Map<string, CompiledSchema>();
const MAX_COMPILED = 256;

function compiledOnce(schema: JsonValue | undefined, path: string): CompiledSchema {
  const key =
    schema !== null && typeof schema === "object" && !Array.isArray(schema)
      ? canonicalJson(schema)
      : undefined;
  const known = key === undefined ? undefined : COMPILED.get(key);
  if (known) return known;
  const compiled = compileSchema(schema as JsonSchema, path);
  if (key !== undefined) {
    if (COMPILED.size >= MAX_COMPILED) COMPILED.delete(COMPILED.keys().next().value as string);
    COMPILED.set(key, compiled);
  }
  return compiled;
}

function sha256(text: string): string {
  return hash("sha256", text, "hex");
}

/** The operation id of a key: a hash of the scope and the host's key (68 printable characters). */
export function stepOperationId(scope: Scope, idempotencyKey: string): string {
  const s = normalizeScope(scope);
  validateId("idempotencyKey", idempotencyKey);
  return `sc1_${sha256(canonicalJson([s.org, s.uid, idempotencyKey]))}`;
}

/** The binding of a request under a configuration revision: a retry with another one conflicts. */
export function stepBinding(step: NormalizedStep, configRevision: string): string {
  return `b1_${sha256(canonicalJson({ ...step.bound, configRevision }))}`;
}

/**
 * Validates and snapshots a request synchronously, before any await or I/O: closed fields, plain
 * bounded data, text under `maxInputChars`, a compilable object schema, tools with compilable
 * input schemas, a tool choice that names exactly one advertised tool, a temperature in 0..2.
 * Throws `ValidationError` (a `SnapshotError` for a shape that is not data); nothing is durable.
 */
export function normalizeStep(raw: StepRequest, maxInputChars: number): NormalizedStep {
  const { copy, signal } = readRequest(raw);
  const scope = normalizeScope(copy.scope);
  const idempotencyKey = validateId("idempotencyKey", copy.idempotencyKey);
  const intent = normalizeIntent(copy.intent);
  const sessionId =
    copy.sessionId === undefined ? undefined : validateId("sessionId", copy.sessionId);
  const system = optionalText("system", copy.system);
  const messages = messagesOf(copy.prompt, copy.messages);
  checkInputChars(system, messages, maxInputChars);
  const { output, compiled } = outputOf(copy.output);
  const { tools, toolChoice } = toolsAndChoiceOf(copy.tools, copy.toolChoice);
  const temperature = normalizeTemperature(copy.temperature);
  const maxOutputTokens = optionalMaxOutputTokens(copy.maxOutputTokens);
  const bound: JsonObject = {
    intent: intent as unknown as JsonObject,
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(system !== undefined ? { system } : {}),
    messages: messages as unknown as JsonValue,
    output: output as unknown as JsonObject,
    tools: tools as unknown as JsonValue,
    ...(toolChoice !== undefined ? { toolChoice: toolChoice as unknown as JsonObject } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
  };
  return Object.freeze({
    scope,
    idempotencyKey,
    intent,
    sessionId,
    system,
    messages,
    output,
    compiled,
    tools,
    toolChoice,
    temperature,
    maxOutputTokens,
    signal,
    bound,
  });
}

/**
 * The request's own fields, each read once through their descriptors (no getter runs) and closed;
 * the signal kept aside as it is, everything else snapshotted as plain bounded data.
 */
function readRequest(raw: StepRequest): {
  readonly copy: Record<string, JsonValue | undefined>;
  readonly signal: AbortSignal | undefined;
} {
  if (raw === null || typeof raw !== "object")
    throw new ValidationError("request", "object", "a step call needs a request object");
  const fields = dataFields(raw, "request");
  for (const key of Object.keys(fields)) {
    if (!FIELDS.includes(key))
      throw new ValidationError(
        `request.${key}`,
        "unknown_field",
        `a step call takes only ${FIELDS.join(", ")}`,
      );
  }
  const signal = fields.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new ValidationError("signal", "abort_signal", "signal must be an AbortSignal");
  const { signal: _signal, ...data } = fields;
  const copy = snapshot(data) as Record<string, JsonValue | undefined>;
  return { copy, signal };
}

/** The system prompt and every message's text together stay under the runtime's input bound. */
function checkInputChars(
  system: string | undefined,
  messages: readonly Msg[],
  maxInputChars: number,
): void {
  const chars =
    (system?.length ?? 0) +
    messages.reduce(
      (n, m) => n + m.blocks.reduce((k, b) => k + (b.type === "text" ? b.text.length : 0), 0),
      0,
    );
  if (chars > maxInputChars)
    throw new ValidationError(
      "messages",
      "max_input_chars",
      `a step call's text is at most ${maxInputChars} characters`,
    );
}

/** The advertised tools and a tool choice checked against them: a name it does not advertise is refused before any I/O. */
function toolsAndChoiceOf(
  rawTools: JsonValue | undefined,
  rawChoice: JsonValue | undefined,
): { readonly tools: readonly ToolSpec[]; readonly toolChoice: ToolChoice | undefined } {
  const tools = toolsOf(rawTools);
  const toolChoice = normalizeToolChoice(rawChoice);
  validateToolChoice(toolChoice, tools);
  if (toolChoice?.type === "required" && tools.length === 0)
    throw new ValidationError(
      "toolChoice",
      "no_tools",
      'toolChoice "required" needs an advertised tool',
    );
  return { tools, toolChoice };
}

function optionalMaxOutputTokens(value: JsonValue | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1)
    throw new ValidationError(
      "maxOutputTokens",
      "positive_integer",
      "maxOutputTokens must be a positive integer",
    );
  return value;
}

function optionalText(path: string, value: JsonValue | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.length === 0)
    throw new ValidationError(path, "string", `${path} must be a non-empty string`);
  return value;
}

function closed(
  path: string,
  value: JsonValue | undefined,
  fields: readonly string[],
): Record<string, JsonValue> {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new ValidationError(path, "object", `${path} must be an object`);
  for (const key of Object.keys(value))
    if (!fields.includes(key))
      throw new ValidationError(
        `${path}.${key}`,
        "unknown_field",
        `${path} takes only ${fields.join(", ")}`,
      );
  return value as Record<string, JsonValue>;
}

/** `prompt` or `messages`, as neutral text messages; the last one is the user's. */
function messagesOf(
  prompt: JsonValue | undefined,
  messages: JsonValue | undefined,
): readonly Msg[] {
  if ((prompt === undefined) === (messages === undefined))
    throw new ValidationError(
      "prompt",
      "one_of",
      "a step call takes exactly one of prompt and messages",
    );
  if (prompt !== undefined)
    return [
      { role: "user", blocks: [{ type: "text", text: optionalText("prompt", prompt) as string }] },
    ];
  if (!Array.isArray(messages) || messages.length === 0 || messages.length > MAX_MESSAGES) {
    throw new ValidationError("messages", "array", `messages must be 1-${MAX_MESSAGES} messages`);
  }
  const out = messages.map((value, i): Msg => {
    const m = closed(`messages[${i}]`, value, ["role", "text"]);
    if (m.role !== "user" && m.role !== "assistant")
      throw new ValidationError(`messages[${i}].role`, "closed", "role must be user or assistant");
    return {
      role: m.role,
      blocks: [{ type: "text", text: optionalText(`messages[${i}].text`, m.text) as string }],
    };
  });
  if (out.at(-1)?.role !== "user")
    throw new ValidationError("messages", "last_user", "the last message must be the user's");
  return out;
}

function outputOf(value: JsonValue | undefined): {
  readonly output: { readonly name: string; readonly schema: JsonSchema };
  readonly compiled: CompiledSchema;
} {
  const o = closed("output", value, ["name", "schema"]);
  if (typeof o.name !== "string" || !OUTPUT_NAME.test(o.name))
    throw new ValidationError(
      "output.name",
      "name",
      "output.name is 1-64 characters of [A-Za-z0-9_-]",
    );
  // The project's validator, compiled once per call: the same schema goes on the wire and checks the answer.
  const compiled = compiledOnce(o.schema, "output.schema");
  return { output: Object.freeze({ name: o.name, schema: compiled.schema }), compiled };
}

function toolsOf(value: JsonValue | undefined): readonly ToolSpec[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > MAX_TOOLS)
    throw new ValidationError("tools", "array", `tools must be at most ${MAX_TOOLS} tools`);
  const seen = new Set<string>();
  return value.map((raw, i): ToolSpec => {
    const t = closed(`tools[${i}]`, raw, ["name", "description", "inputSchema"]);
    if (typeof t.name !== "string" || !TOOL_NAME.test(t.name))
      throw new ValidationError(
        `tools[${i}].name`,
        "tool_name",
        "tool names are 1-64 characters of [A-Za-z0-9_-]",
      );
    if (seen.has(t.name))
      throw new ValidationError(`tools[${i}].name`, "duplicate", "a tool is advertised once");
    seen.add(t.name);
    if (typeof t.description !== "string")
      throw new ValidationError(`tools[${i}].description`, "string", "a tool needs a description");
    const compiled = compiledOnce(t.inputSchema, `tools[${i}].inputSchema`);
    return Object.freeze({
      name: t.name,
      description: t.description,
      inputSchema: compiled.schema,
    });
  });
}
