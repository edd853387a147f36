import {
  type Block,
  canonicalJson,
  type JsonValue,
  type ModelStreamEvent,
  type ProviderToolCallBlock,
  type ProviderToolResultBlock,
  type ReasoningBlock,
  type RefusalCategory,
  refusalCategory,
  type StopReason,
  type StreamToolCall,
  SnapshotError,
  snapshot,
  type UsageEvidence,
} from "@alma-harness/core";
import { argumentsOf } from "./arguments.js";
import { StreamInvalidError, StreamTornError } from "./errors.js";
import { checkEvidence, reconcileUsage } from "./usage-evidence.js";

/** What one validated model round produced, blocks in arrival order (reasoning blocks as the provider closed them). */
export interface StepOutput {
  readonly blocks: readonly Block[];
  readonly text: string;
  readonly toolCalls: readonly StreamToolCall[];
  readonly stopReason: StopReason;
  readonly evidence: UsageEvidence;
  readonly webSearches: number;
  /** With a `refusal` stop: the provider's category in the closed vocabulary (`unspecified` when it named none). */
  readonly refusal?: RefusalCategory;
}

/** What a stream showed before it failed: content events, and the last usage evidence reported. */
export interface StreamSeen {
  content: number;
  usage: UsageEvidence | undefined;
}

const EVENT_LIMITS = Object.freeze({
  maxDepth: 64,
  maxNodes: 100_000,
  maxStringBytes: 4 * 1024 * 1024,
  maxTotalBytes: 8 * 1024 * 1024,
});
const MAX_ID = 200;

/** Who produced a round: stamped on its reasoning blocks, so an adapter replays only its own. */
export interface StepOrigin {
  readonly provider: string;
  readonly model: string;
}

interface Acc {
  origin: StepOrigin | undefined;
  blocks: Block[];
  text: string;
  reasoning: { text: string; signature?: string; redacted?: string } | undefined;
  calls: StreamToolCall[];
  ids: Set<string>;
  evidence: UsageEvidence | undefined;
  providerCalls: number;
}

/**
 * Pulls a model stream and checks it agrees with itself before anything becomes an intention:
 * bounded plain data, text before tool calls, complete unique calls, exactly one terminal frame
 * (the first ends pulling), deltas equal to the terminal text, streamed calls equal to the terminal
 * calls, a stop reason that agrees with the calls, safe usage. `turnCallIds` holds the ids seen
 * earlier in the turn. Throws `StreamInvalidError` or `StreamTornError`; the iterator is always closed.
 * `seen` counts what the stream showed, so a failure can tell a refusal before anything streamed.
 * A reasoning block ends at a delta carrying a signature or redacted data (consecutive provider
 * blocks stay separate, as replay requires); `origin` is stamped on every reasoning block.
 */
export async function collectStep(
  stream: AsyncIterable<ModelStreamEvent>,
  turnCallIds: ReadonlySet<string>,
  pull: <T>(p: Promise<T>) => Promise<T>,
  seen?: StreamSeen,
  origin?: StepOrigin,
): Promise<StepOutput> {
  const iterator = stream[Symbol.asyncIterator]();
  const acc: Acc = {
    origin,
    blocks: [],
    text: "",
    reasoning: undefined,
    calls: [],
    ids: new Set(),
    evidence: undefined,
    providerCalls: 0,
  };
  try {
    for (;;) {
      const next = await pull(iterator.next());
      if (next.done) throw new StreamTornError();
      const event = plain(next.value);
      // The first terminal frame ends pulling: anything queued after it is never inspected.
      if (event.type === "response_completed") return finish(acc, event);
      take(acc, event, turnCallIds);
      if (seen) {
        if (event.type === "usage") seen.usage = event.evidence;
        else seen.content += 1;
      }
    }
  } finally {
    // Closing is best effort and never awaited: a stream that ignores return() cannot hold the turn.
    void closeQuietly(iterator);
  }
}

async function closeQuietly(iterator: AsyncIterator<unknown>): Promise<void> {
  try {
    await iterator.return?.();
  } catch {
    // closing an abandoned stream is best effort
  }
}

function plain(value: unknown): ModelStreamEvent {
  try {
    const copy = snapshot(value, EVENT_LIMITS);
    if (copy === null || typeof copy !== "object" || Array.isArray(copy))
      throw new StreamInvalidError("shape", "an event must be an object");
    return copy as unknown as ModelStreamEvent;
  } catch (error) {
    if (error instanceof SnapshotError) throw new StreamInvalidError("plain_data", error.message);
    throw error;
  }
}

function flushReasoning(acc: Acc): void {
  const r = acc.reasoning;
  if (!r) return;
  const block: ReasoningBlock = {
    type: "reasoning",
    text: r.text,
    ...(r.signature !== undefined ? { signature: r.signature } : {}),
    ...(r.redacted !== undefined ? { redacted: r.redacted } : {}),
    ...(acc.origin ? { provider: acc.origin.provider, model: acc.origin.model } : {}),
  };
  acc.blocks.push(block);
  acc.reasoning = undefined;
}

/** Checks one non-terminal event and folds it into the round: each kind has its own rule. */
function take(acc: Acc, event: ModelStreamEvent, turnCallIds: ReadonlySet<string>): void {
  switch (event.type) {
    case "text_delta":
      takeText(acc, event);
      return;
    case "reasoning_delta":
      takeReasoning(acc, event);
      return;
    case "tool_call":
      takeToolCall(acc, event, turnCallIds);
      return;
    case "provider_tool_call":
      takeProviderCall(acc, event);
      return;
    case "provider_tool_result":
      takeProviderResult(acc, event);
      return;
    case "usage":
      checkEvidence(event.evidence);
      acc.evidence = event.evidence;
      return;
    default:
      throw new StreamInvalidError(
        "unknown_event",
        `unknown stream event "${String((event as { type?: unknown }).type)}"`,
      );
  }
}

type EventOf<T extends ModelStreamEvent["type"]> = Extract<ModelStreamEvent, { type: T }>;

/** Text comes before any tool call; consecutive deltas grow one text block. */
function takeText(acc: Acc, event: EventOf<"text_delta">): void {
  if (typeof event.text !== "string" || event.text.length === 0)
    throw new StreamInvalidError("text_delta", "a text delta must be a non-empty string");
  if (acc.calls.length > 0)
    throw new StreamInvalidError("text_after_tool_calls", "text arrived after a tool call");
  flushReasoning(acc);
  acc.text += event.text;
  const last = acc.blocks.at(-1);
  if (last?.type === "text")
    acc.blocks[acc.blocks.length - 1] = { type: "text", text: last.text + event.text };
  else acc.blocks.push({ type: "text", text: event.text });
}

function takeReasoning(acc: Acc, event: EventOf<"reasoning_delta">): void {
  if (typeof event.text !== "string")
    throw new StreamInvalidError("reasoning_delta", "reasoning text must be a string");
  for (const key of ["signature", "redacted"] as const) {
    if (event[key] !== undefined && typeof event[key] !== "string")
      throw new StreamInvalidError("reasoning_delta", `reasoning ${key} must be a string`);
  }
  const r = acc.reasoning ?? { text: "" };
  r.text += event.text;
  if (event.signature !== undefined) r.signature = event.signature;
  if (event.redacted !== undefined) r.redacted = event.redacted;
  acc.reasoning = r;
  // The replay data closes the provider's block: the next delta starts another one.
  if (event.signature !== undefined || event.redacted !== undefined) flushReasoning(acc);
}

function takeToolCall(
  acc: Acc,
  event: EventOf<"tool_call">,
  turnCallIds: ReadonlySet<string>,
): void {
  checkCall(event, acc, turnCallIds);
  flushReasoning(acc);
  const call = { id: event.id, name: event.name, arguments: event.arguments };
  acc.calls.push(call);
  acc.ids.add(call.id);
  acc.blocks.push({ type: "tool_call", id: call.id, name: call.name, input: {} });
}

/** A provider-run tool's call, kept as a block; the round reports at least this many searches. */
function takeProviderCall(acc: Acc, event: EventOf<"provider_tool_call">): void {
  checkProviderBlock(event.provider, event.id, event.name);
  flushReasoning(acc);
  acc.providerCalls += 1;
  const block: ProviderToolCallBlock = {
    type: "provider_tool_call",
    provider: event.provider,
    id: event.id,
    name: event.name,
    payload: event.payload,
  };
  acc.blocks.push(block);
}

function takeProviderResult(acc: Acc, event: EventOf<"provider_tool_result">): void {
  checkProviderBlock(event.provider, event.callId, event.name);
  if (!Number.isSafeInteger(event.resultCount) || event.resultCount < 0)
    throw new StreamInvalidError(
      "provider_tool_result",
      "resultCount must be a non-negative integer",
    );
  flushReasoning(acc);
  const block: ProviderToolResultBlock = {
    type: "provider_tool_result",
    provider: event.provider,
    callId: event.callId,
    name: event.name,
    resultCount: event.resultCount,
    payload: event.payload,
  };
  acc.blocks.push(block);
}

function checkCall(call: StreamToolCall, acc: Acc, turnCallIds: ReadonlySet<string>): void {
  if (typeof call.id !== "string" || call.id.length === 0 || call.id.length > MAX_ID)
    throw new StreamInvalidError("tool_call", "a tool call needs an id of 1-200 characters");
  if (typeof call.name !== "string" || call.name.length === 0)
    throw new StreamInvalidError("tool_call", "a tool call needs a name");
  if (typeof call.arguments !== "string")
    throw new StreamInvalidError("tool_call", "tool call arguments must be JSON text");
  if (acc.ids.has(call.id) || turnCallIds.has(call.id))
    throw new StreamInvalidError(
      "duplicate_call_id",
      `call id "${call.id}" was already used in this turn`,
    );
}

function checkProviderBlock(provider: unknown, id: unknown, name: unknown): void {
  for (const value of [provider, id, name]) {
    if (typeof value !== "string" || value.length === 0 || value.length > MAX_ID)
      throw new StreamInvalidError(
        "provider_tool",
        "a provider tool block needs a provider, an id and a name of 1-200 characters",
      );
  }
}

function sameArguments(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return canonicalJson(JSON.parse(a) as JsonValue) === canonicalJson(JSON.parse(b) as JsonValue);
  } catch {
    return false;
  }
}

function finish(
  acc: Acc,
  event: Extract<ModelStreamEvent, { type: "response_completed" }>,
): StepOutput {
  flushReasoning(acc);
  if (typeof event.stopReason !== "string" || event.stopReason.length === 0)
    throw new StreamInvalidError("stop_reason", "the terminal frame needs a stop reason");
  if (typeof event.text !== "string")
    throw new StreamInvalidError("terminal_text", "the terminal frame needs its text");
  if (acc.text.length > 0 && event.text !== acc.text)
    throw new StreamInvalidError(
      "text_mismatch",
      "the streamed text differs from the completed text",
    );
  if (acc.text.length === 0 && event.text.length > 0) {
    // No deltas: the completed text is the step's text, after the reasoning that preceded it.
    const at = acc.blocks.findIndex((b) => b.type !== "reasoning");
    acc.blocks.splice(at < 0 ? acc.blocks.length : at, 0, { type: "text", text: event.text });
  }
  if (!Array.isArray(event.toolCalls))
    throw new StreamInvalidError("calls_mismatch", "the terminal frame needs its tool calls");
  const terminal = event.toolCalls;
  if (terminal.length !== acc.calls.length)
    throw new StreamInvalidError(
      "calls_mismatch",
      "the streamed tool calls differ from the completed ones",
    );
  terminal.forEach((call, i) => {
    const streamed = acc.calls[i];
    if (
      !streamed ||
      streamed.id !== call.id ||
      streamed.name !== call.name ||
      typeof call.arguments !== "string" ||
      !sameArguments(streamed.arguments, call.arguments)
    ) {
      throw new StreamInvalidError(
        "calls_mismatch",
        `tool call #${i + 1} differs between the stream and the terminal frame`,
      );
    }
  });
  const hasCalls = terminal.length > 0;
  if (event.stopReason === "tool_use" && !hasCalls)
    throw new StreamInvalidError("stop_reason", "tool_use without a tool call");
  // A cut or refused step may have released calls: the loop withholds them with the rest.
  if (
    hasCalls &&
    event.stopReason !== "tool_use" &&
    event.stopReason !== "max_tokens" &&
    event.stopReason !== "refusal"
  ) {
    throw new StreamInvalidError("stop_reason", `tool calls with stop reason ${event.stopReason}`);
  }
  const evidence = reconcileUsage(acc.evidence, event.usage);
  const reported =
    evidence.status === "known" || evidence.status === "unpriced"
      ? (evidence.usage.webSearchRequests ?? 0)
      : 0;
  return {
    blocks: fillInputs(acc.blocks, acc.calls),
    text: acc.text || event.text,
    toolCalls: acc.calls,
    stopReason: event.stopReason,
    evidence,
    webSearches: Math.max(reported, acc.providerCalls),
    ...(event.stopReason === "refusal" ? { refusal: refusalCategory(event.refusal) } : {}),
  };
}

/** Tool-call blocks carry parsed input when it parses; unparsable arguments keep `{}` (answered as bad input). */
function fillInputs(blocks: Block[], calls: readonly StreamToolCall[]): Block[] {
  const byId = new Map(calls.map((c) => [c.id, c]));
  return blocks.map((b) => {
    if (b.type !== "tool_call") return b;
    const call = byId.get(b.id);
    const parsed = call ? argumentsOf(call) : undefined;
    return parsed ? { ...b, input: parsed } : b;
  });
}
