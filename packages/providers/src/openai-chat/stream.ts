import type {
  ModelStreamEvent,
  ProviderError,
  ServiceTier,
  UsageEvidence,
} from "@alma-harness/core";
import type { EventSourceMessage } from "eventsource-parser";
import { type ErrorFacts, errorFields, tornError } from "../shared/errors.js";
import {
  asCount,
  asRecord,
  asString,
  NeutralStream,
  parseData,
  type StreamTransform,
} from "../shared/neutral.js";
import { chatStopReason } from "./stop-reason.js";
import { chatEvidence } from "./usage.js";
import type { ChatWireUsage } from "./wire.js";

/** How a dialect reads reasoning out of a delta, and closes a reasoning block. */
export interface ChatReasoningReader {
  read(delta: Record<string, unknown>, neutral: NeutralStream, out: ModelStreamEvent[]): void;
  /** Called before content, tool calls or the end: emits what replay needs, if anything. */
  close(neutral: NeutralStream, out: ModelStreamEvent[]): void;
}

/** `reasoning_content` (vLLM, llama.cpp, DeepSeek) or `reasoning` (OpenRouter, Ollama) text. */
export function plainReasoning(): ChatReasoningReader {
  return {
    read(delta, neutral, out) {
      const text = asString(delta.reasoning_content) ?? asString(delta.reasoning);
      if (text) neutral.reasoning(text, {}, out);
    },
    close() {},
  };
}

export interface ChatTransformOptions {
  readonly provider: string;
  readonly classify: (facts: ErrorFacts) => ProviderError;
  readonly reasoning: ChatReasoningReader;
  readonly servedTier: (value: unknown) => { tier?: ServiceTier; unresolved?: string };
  /** Fallback call ids for servers that omit them, unique per completion. */
  readonly callId: (completionId: string | undefined, position: number) => string;
  /** A router's name of the upstream that served a chunk (OpenRouter's `provider`). */
  readonly upstream?: (chunk: Record<string, unknown>) => string | undefined;
  /** A dialect's last word on the evidence (OpenRouter: the upstream, the reported cost). */
  readonly refine?: (
    evidence: UsageEvidence,
    seen: { readonly usage: ChatWireUsage | undefined; readonly upstream: string | undefined },
  ) => UsageEvidence;
}

interface PendingCall {
  id: string | undefined;
  name: string;
  args: string;
}

/**
 * Chat Completions chunks → neutral events. Tool-call fragments are accumulated by `index`
 * (indexes need not start at 0 nor be contiguous) and released at the end. Every chunk is checked
 * for an `error` object first (OpenRouter and some servers report failures inside a 200 stream).
 * The stream completes at `data: [DONE]`, or at end of body once a `finish_reason` was seen;
 * without one it is torn.
 */
export class ChatTransform implements StreamTransform {
  private readonly neutral: NeutralStream;
  private readonly calls: PendingCall[] = [];
  private readonly byIndex = new Map<number, PendingCall>();
  private finishReason: string | undefined;
  private refused = false;
  private usage: ChatWireUsage | undefined;
  private tier: unknown;
  private completionId: string | undefined;
  private upstream: string | undefined;
  private result: UsageEvidence = { status: "unknown" };

  constructor(private readonly options: ChatTransformOptions) {
    this.neutral = new NeutralStream(options.provider);
  }

  get done(): boolean {
    return this.neutral.completed;
  }

  get pristine(): boolean {
    return this.neutral.empty && this.usage === undefined && this.finishReason === undefined;
  }

  evidence(): UsageEvidence {
    return this.result;
  }

  push(message: EventSourceMessage): ModelStreamEvent[] {
    if (message.data.trim() === "[DONE]") return this.end();
    const data = parseData(message, this.options.provider);
    // Usage first: an error chunk may carry the billed counts (OpenRouter), known before it throws.
    const usage = asRecord(data.usage);
    if (usage) this.usage = usage as ChatWireUsage;
    this.upstream ??= this.options.upstream?.(data);
    if (data.error !== undefined && data.error !== null) return this.failed(data);
    this.completionId ??= asString(data.id);
    if (data.service_tier !== undefined && data.service_tier !== null)
      this.tier = data.service_tier;
    const out: ModelStreamEvent[] = [];
    const choice = Array.isArray(data.choices) ? asRecord(data.choices[0]) : undefined;
    if (!choice) return out;
    const delta = asRecord(choice.delta);
    if (delta) this.readDelta(delta, out);
    const finish = asString(choice.finish_reason);
    if (finish && this.finishReason === undefined) this.finishReason = finish;
    return out;
  }

  end(): ModelStreamEvent[] {
    if (this.finishReason === undefined) throw tornError(this.options.provider, "no finish_reason");
    if (this.finishReason === "error") {
      throw this.options.classify({
        provider: this.options.provider,
        message: "the stream finished with finish_reason error",
        pristine: this.pristine,
      });
    }
    const out: ModelStreamEvent[] = [];
    this.options.reasoning.close(this.neutral, out);
    this.calls.forEach((call, position) => {
      this.neutral.toolCall({
        id: call.id ?? this.options.callId(this.completionId, position),
        name: call.name,
        arguments: call.args,
      });
    });
    const stop = this.refused
      ? "refusal"
      : chatStopReason(this.finishReason, this.calls.length > 0);
    this.result = this.settled();
    out.push(...this.neutral.finish(stop, this.result));
    return out;
  }

  /**
   * An error chunk. After `finish_reason: "length"` it only says why the output was cut (OpenRouter's
   * "Token limit reached"): the stream completes as `max_tokens` with its usage. Otherwise it throws,
   * the usage it carried kept as the call's evidence.
   */
  private failed(data: Record<string, unknown>): ModelStreamEvent[] {
    if (this.finishReason === "length") return this.end();
    if (this.usage) this.result = this.settled();
    throw this.streamError(data);
  }

  private settled(): UsageEvidence {
    const evidence = chatEvidence(this.usage, this.options.servedTier(this.tier));
    return this.options.refine
      ? this.options.refine(evidence, { usage: this.usage, upstream: this.upstream })
      : evidence;
  }

  private readDelta(delta: Record<string, unknown>, out: ModelStreamEvent[]): void {
    this.options.reasoning.read(delta, this.neutral, out);
    const content = asString(delta.content);
    if (content) {
      this.options.reasoning.close(this.neutral, out);
      this.neutral.textDelta(content, out);
    }
    const refusal = asString(delta.refusal);
    if (refusal) {
      this.refused = true;
      this.neutral.textDelta(refusal, out);
    }
    if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) {
      this.options.reasoning.close(this.neutral, out);
      for (const fragment of delta.tool_calls) this.readCall(asRecord(fragment));
    }
  }

  private readCall(fragment: Record<string, unknown> | undefined): void {
    if (!fragment) return;
    const index = asCount(fragment.index);
    const id = asString(fragment.id) || undefined;
    const fn = asRecord(fragment.function);
    let call = index !== undefined ? this.byIndex.get(index) : this.calls.at(-1);
    // A new id at a known index is a new call (servers that send each call whole at index 0).
    if (
      !call ||
      (id !== undefined && call.id !== undefined && call.id !== id) ||
      (index === undefined && id !== undefined)
    ) {
      call = { id, name: "", args: "" };
      this.calls.push(call);
      if (index !== undefined) this.byIndex.set(index, call);
    }
    call.id ??= id;
    call.name += asString(fn?.name) ?? "";
    call.args += asString(fn?.arguments) ?? "";
  }

  private streamError(data: Record<string, unknown>): ProviderError {
    const fields = errorFields(data);
    const numeric = asCount(asRecord(data.error)?.code);
    const status = numeric !== undefined && numeric >= 400 && numeric < 600 ? numeric : undefined;
    const facts: ErrorFacts = {
      provider: this.options.provider,
      ...fields,
      ...(status !== undefined ? { code: undefined } : {}),
      message: fields.message ?? "error in stream",
      pristine: this.pristine,
    };
    return this.options.classify(
      status !== undefined && status !== 400 ? { ...facts, status } : facts,
    );
  }
}
