import {
  type Block,
  type JsonObject,
  type ModelChoice,
  type ModelClient,
  type ModelPolicy,
  type Msg,
  type MsgMeta,
  normalizeIntent,
  normalizeModelChoice,
  normalizeScope,
  snapshot,
  snapshotObject,
  type ToolDefinition,
  ValidationError,
  validateId,
} from "@alma-harness/core";
import type { TurnInput } from "./engine.js";
import { type CompiledMedia, detachInlineBytes } from "./media.js";

const BLOCK_TYPES = new Set([
  "text",
  "media",
  "tool_call",
  "tool_result",
  "provider_tool_call",
  "provider_tool_result",
  "reasoning",
]);
const INPUT_FIELDS = new Set([
  "scope",
  "sessionId",
  "rootKey",
  "turnId",
  "admissionId",
  "history",
  "log",
  "revision",
  "input",
  "inputMeta",
  "intent",
  "choice",
  "trigger",
  "grant",
  "maxCalls",
  "facts",
  "signal",
  "deadlineAt",
  "answerByAt",
  "sink",
  "continuations",
]);

/**
 * Validates a turn's input synchronously, before anything runs, and returns a detached copy: an
 * invalid scope throws `InvalidScopeError`; anything else malformed throws `ValidationError`. The
 * input blocks, intent, facts and meta are frozen snapshots, so no caller, hook or tool can change
 * what the turn authorized. The history is the store's frozen view and is taken as given.
 */
export function normalizeTurnInput(registry: InputRegistry, raw: TurnInput): TurnInput {
  if (raw === null || typeof raw !== "object")
    throw new ValidationError("input", "object", "a turn input must be an object");
  for (const key of Object.keys(raw))
    if (!INPUT_FIELDS.has(key))
      throw new ValidationError(key, "unknown_field", `${key} is not a field of a turn input`);
  const scope = normalizeScope(raw.scope);
  checkView(raw);
  const input = inputBlocks(registry.media, raw.input);
  checkSeams(raw);
  return Object.freeze({
    scope,
    sessionId: validateId("sessionId", raw.sessionId),
    rootKey: validateId("rootKey", raw.rootKey),
    turnId: validateId("turnId", raw.turnId),
    ...(raw.admissionId !== undefined
      ? { admissionId: validateId("admissionId", raw.admissionId) }
      : {}),
    history: raw.history as readonly Msg[],
    ...(raw.log !== undefined ? { log: raw.log as readonly Msg[] } : {}),
    revision: raw.revision,
    input,
    intent: normalizeIntent(raw.intent),
    ...(raw.inputMeta !== undefined
      ? { inputMeta: snapshotObject(raw.inputMeta, "inputMeta") as unknown as MsgMeta }
      : {}),
    ...(raw.choice !== undefined ? { choice: raw.choice } : {}),
    ...(raw.trigger !== undefined ? { trigger: raw.trigger } : {}),
    ...(raw.grant !== undefined ? { grant: normalizeGrant(registry.tools, raw.grant) } : {}),
    ...(raw.maxCalls !== undefined ? { maxCalls: narrowCalls(registry.limits, raw.maxCalls) } : {}),
    facts:
      raw.facts === undefined
        ? Object.freeze({})
        : (snapshotObject(raw.facts, "facts") as JsonObject),
    ...(raw.signal !== undefined ? { signal: raw.signal } : {}),
    ...(raw.deadlineAt !== undefined ? { deadlineAt: raw.deadlineAt } : {}),
    ...(raw.answerByAt !== undefined ? { answerByAt: raw.answerByAt } : {}),
    ...(raw.sink !== undefined ? { sink: raw.sink } : {}),
    ...(raw.continuations !== undefined ? { continuations: raw.continuations } : {}),
  });
}

/** What a turn's input is checked against: the media policy, the registered tools, the call limit. */
export interface InputRegistry {
  readonly media: CompiledMedia | undefined;
  readonly tools: ReadonlyMap<string, ToolDefinition>;
  readonly limits: { readonly maxCalls: number };
}

/** A turn's own call limit: it may narrow the engine's, never widen it. */
function narrowCalls(limits: InputRegistry["limits"], value: unknown): number {
  if (
    typeof value !== "number" ||
    !Number.isSafeInteger(value) ||
    value < 1 ||
    value > limits.maxCalls
  )
    throw new ValidationError(
      "maxCalls",
      "narrow",
      `maxCalls must be an integer 1-${limits.maxCalls}`,
    );
  return value;
}

/** The view the turn starts from: the history, the stored log it was rendered from, its revision. */
function checkView(raw: TurnInput): void {
  if (!Array.isArray(raw.history))
    throw new ValidationError("history", "array", "history must be an array of messages");
  if (raw.log !== undefined && (!Array.isArray(raw.log) || raw.log.length !== raw.history.length)) {
    throw new ValidationError(
      "log",
      "array",
      "log must be the stored view history was rendered from, message for message",
    );
  }
  if (!Number.isSafeInteger(raw.revision) || raw.revision < 0)
    throw new ValidationError("revision", "integer", "revision must be a non-negative integer");
}

/** The trigger, the seams (signal, sink) and the times. */
function checkSeams(raw: TurnInput): void {
  if (raw.trigger !== undefined && (typeof raw.trigger !== "string" || raw.trigger.length > 200))
    throw new ValidationError(
      "trigger",
      "string_0_200",
      "trigger must be a string of at most 200 characters",
    );
  if (raw.signal !== undefined && !(raw.signal instanceof AbortSignal))
    throw new ValidationError("signal", "abort_signal", "signal must be an AbortSignal");
  if (raw.sink !== undefined && typeof raw.sink !== "function")
    throw new ValidationError("sink", "function", "sink must be a function");
  if (
    raw.continuations !== undefined &&
    typeof (raw.continuations as { write?: unknown } | null)?.write !== "function"
  )
    throw new ValidationError(
      "continuations",
      "writer",
      "continuations must be an object with a write(continuation)",
    );
  if (raw.deadlineAt !== undefined && (!Number.isSafeInteger(raw.deadlineAt) || raw.deadlineAt < 0))
    throw new ValidationError("deadlineAt", "epoch_ms", "deadlineAt must be epoch milliseconds");
  if (raw.answerByAt !== undefined && (!Number.isSafeInteger(raw.answerByAt) || raw.answerByAt < 0))
    throw new ValidationError("answerByAt", "epoch_ms", "answerByAt must be epoch milliseconds");
}

/** The input blocks, snapshotted and closed; inline media bytes checked by the media policy. */
function inputBlocks(media: CompiledMedia | undefined, raw: unknown): readonly Block[] {
  // Inline media bytes stay out of the snapshot's limits; maxBytes bounds them (spec: media-by-bytes).
  const inline = detachInlineBytes(media, raw as readonly Block[]);
  let input = snapshot(inline.blocks) as unknown as readonly Block[];
  if (!Array.isArray(input) || input.length === 0)
    throw new ValidationError("input", "non_empty", "input must be a non-empty array of blocks");
  input.forEach((block, i) => {
    if (
      block === null ||
      typeof block !== "object" ||
      !BLOCK_TYPES.has((block as { type?: unknown }).type as string)
    ) {
      throw new ValidationError(`input[${i}].type`, "closed", `input[${i}] is not a block`);
    }
  });
  if (inline.data.size > 0)
    input = Object.freeze(
      input.map((block, i) =>
        inline.data.has(i) ? Object.freeze({ ...block, data: inline.data.get(i) }) : block,
      ) as Block[],
    );
  return input;
}

/** A grant names registered tools only (a profile cannot name an unregistered one). */
function normalizeGrant(
  tools: ReadonlyMap<string, ToolDefinition>,
  grant: unknown,
): readonly string[] {
  if (!Array.isArray(grant) || grant.length > 1024)
    throw new ValidationError("grant", "names", "grant must be an array of tool names");
  return Object.freeze(
    grant.map((name, i) => {
      if (typeof name !== "string" || !tools.has(name))
        throw new ValidationError(
          `grant[${i}]`,
          "registered",
          `grant[${i}] is not a registered tool`,
        );
      return name;
    }),
  );
}

/**
 * The main route: the snapshotted choice when the caller passes one, else `policy.resolve` on a
 * copied intent. A throw, a malformed choice or an absent client is a refusal (`not_admitted`).
 */
export function resolveMainChoice(
  routes: { readonly policy: ModelPolicy; readonly clients: ReadonlyMap<string, ModelClient> },
  input: TurnInput,
): ModelChoice {
  const choice = normalizeModelChoice(input.choice ?? routes.policy.resolve({ ...input.intent }));
  if (!routes.clients.has(choice.clientId))
    throw new Error(`the policy chose an absent client "${choice.clientId}"`);
  return choice;
}
