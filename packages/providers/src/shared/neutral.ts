import type {
  JsonValue,
  ModelStreamEvent,
  RefusalCategory,
  StopReason,
  StreamToolCall,
  UsageEvidence,
} from "@alma-harness/core";
import type { EventSourceMessage } from "eventsource-parser";
import { invalidStreamError } from "./errors.js";

/**
 * One adapter's wire-to-neutral state machine. `push` turns one SSE event into neutral events
 * (throwing `ProviderError` for an error event); `done` turns true on the terminal frame; `end` is
 * called at end of body and either completes or throws `stream_torn`. `pristine` stays true while
 * nothing was streamed and no usage was reported (the condition for a `RejectionProof`).
 */
export interface StreamTransform {
  push(message: EventSourceMessage): readonly ModelStreamEvent[];
  end(): readonly ModelStreamEvent[];
  readonly done: boolean;
  readonly pristine: boolean;
  /** The final evidence once `done`; `unknown` before. */
  evidence(): UsageEvidence;
}

/**
 * The neutral side shared by every transform. It keeps the invariants of the core stream contract:
 * text deltas are non-empty and their concatenation is the terminal `text`; complete tool calls are
 * buffered and released after all content (so no text follows a tool call) and equal the terminal
 * `toolCalls`; one `usage` event then exactly one `response_completed` close the stream.
 */
export class NeutralStream {
  private text = "";
  private readonly calls: StreamToolCall[] = [];
  private count = 0;
  private finished = false;

  constructor(readonly provider: string) {}

  /** True until the first content event. */
  get empty(): boolean {
    return this.count === 0;
  }

  get completed(): boolean {
    return this.finished;
  }

  get hasToolCalls(): boolean {
    return this.calls.length > 0;
  }

  textDelta(text: string, out: ModelStreamEvent[]): void {
    if (!text) return;
    this.text += text;
    this.count += 1;
    out.push({ type: "text_delta", text });
  }

  reasoning(
    text: string,
    extra: { signature?: string; redacted?: string },
    out: ModelStreamEvent[],
  ): void {
    if (!text && !extra.signature && !extra.redacted) return;
    this.count += 1;
    out.push({
      type: "reasoning_delta",
      text,
      ...(extra.signature ? { signature: extra.signature } : {}),
      ...(extra.redacted ? { redacted: extra.redacted } : {}),
    });
  }

  toolCall(call: StreamToolCall): void {
    this.count += 1;
    this.calls.push({
      id: call.id,
      name: call.name,
      arguments: call.arguments === "" ? "{}" : call.arguments,
    });
  }

  providerCall(id: string, name: string, payload: JsonValue, out: ModelStreamEvent[]): void {
    this.count += 1;
    out.push({ type: "provider_tool_call", provider: this.provider, id, name, payload });
  }

  providerResult(
    callId: string,
    name: string,
    resultCount: number,
    payload: JsonValue,
    out: ModelStreamEvent[],
  ): void {
    this.count += 1;
    out.push({
      type: "provider_tool_result",
      provider: this.provider,
      callId,
      name,
      resultCount,
      payload,
    });
  }

  /** The closing frames: buffered tool calls, the usage evidence, the one terminal event (a refusal carries its category). */
  finish(
    stopReason: StopReason,
    evidence: UsageEvidence,
    refusal?: RefusalCategory,
  ): ModelStreamEvent[] {
    if (this.finished) throw invalidStreamError(this.provider, "a second terminal frame");
    this.finished = true;
    const out: ModelStreamEvent[] = this.calls.map((c) => ({ type: "tool_call", ...c }));
    out.push({ type: "usage", evidence });
    const usage =
      evidence.status === "known" || evidence.status === "unpriced" ? evidence.usage : undefined;
    const category = stopReason === "refusal" ? { refusal: refusal ?? "unspecified" } : {};
    out.push({
      type: "response_completed",
      stopReason,
      text: this.text,
      toolCalls: [...this.calls],
      ...(usage ? { usage } : {}),
      ...category,
    });
    return out;
  }
}

/** Parses one SSE `data:` payload as a JSON object, or throws `stream_invalid`. */
export function parseData(message: EventSourceMessage, provider: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(message.data);
  } catch (error) {
    throw invalidStreamError(
      provider,
      `an event is not JSON (${message.data.slice(0, 60)})`,
      error,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidStreamError(provider, "an event is not a JSON object");
  }
  return value as Record<string, unknown>;
}

export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

export function asString(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** A safe non-negative integer counter, or `undefined` when absent or malformed. */
export function asCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}
