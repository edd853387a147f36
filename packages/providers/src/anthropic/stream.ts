import {
  type CacheTtl,
  type JsonObject,
  type JsonValue,
  type ModelStreamEvent,
  type ProviderError,
  type RefusalCategory,
  refusalCategory,
  type StopReason,
  type UsageEvidence,
} from "@alma-harness/core";
import type { EventSourceMessage } from "eventsource-parser";
import { type ErrorFacts, errorFields, invalidStreamError, tornError } from "../shared/errors.js";
import {
  asCount,
  asRecord,
  asString,
  NeutralStream,
  parseData,
  type StreamTransform,
} from "../shared/neutral.js";
import { ANTHROPIC_PROVIDER } from "./messages.js";
import { anthropicStopReason } from "./stop-reason.js";
import { anthropicEvidence, mergeUsage } from "./usage.js";
import type { WireUsage } from "./wire.js";

type Open =
  | { readonly kind: "text" }
  | { kind: "thinking"; signature: string }
  | {
      kind: "tool";
      readonly id: string;
      readonly name: string;
      json: string;
      readonly start: JsonObject;
    }
  | {
      kind: "server_tool";
      readonly id: string;
      readonly name: string;
      json: string;
      readonly start: JsonObject;
    };

/**
 * Anthropic's event stream → neutral events. Blocks are accumulated by `index`; tool input JSON is
 * joined from every `input_json_delta` and released at `content_block_stop` (a block cut by
 * `max_tokens` never stops, so it is never released). Thinking deltas stream as reasoning; the
 * signature closes the block. Server tool blocks become provider tool events, their payload the
 * block as received. Unknown events, blocks and deltas are ignored (the API adds them freely).
 */
export class AnthropicTransform implements StreamTransform {
  private readonly neutral = new NeutralStream(ANTHROPIC_PROVIDER);
  private readonly blocks = new Map<number, Open>();
  private readonly serverNames = new Map<string, string>();
  private readonly usage: WireUsage = {};
  private started = false;
  private finalUsage = false;
  private stopReason: StopReason | undefined;
  private refusal: RefusalCategory | undefined;
  private result: UsageEvidence = { status: "unknown" };

  constructor(
    private readonly classify: (facts: ErrorFacts) => ProviderError,
    private readonly requestTtl: CacheTtl | undefined,
  ) {}

  get done(): boolean {
    return this.neutral.completed;
  }

  get pristine(): boolean {
    return !this.started && this.neutral.empty;
  }

  evidence(): UsageEvidence {
    return this.result;
  }

  push(message: EventSourceMessage): ModelStreamEvent[] {
    const data = parseData(message, ANTHROPIC_PROVIDER);
    const out: ModelStreamEvent[] = [];
    switch (data.type ?? message.event) {
      case "message_start":
        this.started = true;
        mergeUsage(this.usage, asRecord(data.message)?.usage);
        break;
      case "content_block_start":
        this.startBlock(asCount(data.index), asRecord(data.content_block), out);
        break;
      case "content_block_delta":
        this.delta(asCount(data.index), asRecord(data.delta), out);
        break;
      case "content_block_stop":
        this.stopBlock(asCount(data.index), out);
        break;
      case "message_delta":
        this.messageDelta(data);
        break;
      case "message_stop":
        return this.finish();
      case "error":
        throw this.streamError(data);
      default:
        break;
    }
    return out;
  }

  end(): ModelStreamEvent[] {
    throw tornError(ANTHROPIC_PROVIDER, this.started ? "no message_stop" : "no message_start");
  }

  private startBlock(
    index: number | undefined,
    block: Record<string, unknown> | undefined,
    out: ModelStreamEvent[],
  ): void {
    if (index === undefined || !block)
      throw invalidStreamError(ANTHROPIC_PROVIDER, "content_block_start without index or block");
    const type = asString(block.type) ?? "";
    if (type === "text") {
      this.blocks.set(index, { kind: "text" });
      this.neutral.textDelta(asString(block.text) ?? "", out);
    } else if (type === "thinking") {
      this.blocks.set(index, { kind: "thinking", signature: asString(block.signature) ?? "" });
      this.neutral.reasoning(asString(block.thinking) ?? "", {}, out);
    } else if (type === "redacted_thinking") {
      this.neutral.reasoning("", { redacted: asString(block.data) ?? "" }, out);
    } else if (type === "tool_use" || type === "server_tool_use") {
      const id = asString(block.id) ?? "";
      const name = asString(block.name) ?? "";
      const kind = type === "tool_use" ? "tool" : "server_tool";
      if (kind === "server_tool") this.serverNames.set(id, name);
      this.blocks.set(index, { kind, id, name, json: "", start: block as JsonObject });
    } else if (type.endsWith("_tool_result")) {
      const callId = asString(block.tool_use_id) ?? "";
      const name = this.serverNames.get(callId) ?? type.slice(0, -"_tool_result".length);
      this.neutral.providerResult(
        callId,
        name,
        resultCount(block.content),
        block as JsonObject,
        out,
      );
    }
  }

  private delta(
    index: number | undefined,
    delta: Record<string, unknown> | undefined,
    out: ModelStreamEvent[],
  ): void {
    const open = index === undefined ? undefined : this.blocks.get(index);
    if (!open || !delta) return;
    switch (delta.type) {
      case "text_delta":
        if (open.kind === "text") this.neutral.textDelta(asString(delta.text) ?? "", out);
        break;
      case "thinking_delta":
        if (open.kind === "thinking")
          this.neutral.reasoning(asString(delta.thinking) ?? "", {}, out);
        break;
      case "signature_delta":
        if (open.kind === "thinking") open.signature = asString(delta.signature) ?? open.signature;
        break;
      case "input_json_delta":
        if (open.kind === "tool" || open.kind === "server_tool")
          open.json += asString(delta.partial_json) ?? "";
        break;
      default:
        break;
    }
  }

  private stopBlock(index: number | undefined, out: ModelStreamEvent[]): void {
    const open = index === undefined ? undefined : this.blocks.get(index);
    if (index === undefined || !open) return;
    this.blocks.delete(index);
    if (open.kind === "thinking") this.neutral.reasoning("", { signature: open.signature }, out);
    else if (open.kind === "tool")
      this.neutral.toolCall({ id: open.id, name: open.name, arguments: toolArguments(open) });
    else if (open.kind === "server_tool") {
      const input = parseServerInput(open);
      this.neutral.providerCall(open.id, open.name, { ...open.start, input }, out);
    }
  }

  /** `stop_details` (a refusal's category) arrives beside `stop_reason`; its explanation is never kept. */
  private messageDelta(data: Record<string, unknown>): void {
    const delta = asRecord(data.delta);
    const reason = asString(delta?.stop_reason);
    if (reason) this.stopReason = anthropicStopReason(reason);
    const details = asRecord(delta?.stop_details) ?? asRecord(data.stop_details);
    if (reason === "refusal") this.refusal = refusalCategory(details?.category);
    const usage = asRecord(data.usage);
    if (usage) {
      mergeUsage(this.usage, usage);
      if (asCount(usage.output_tokens) !== undefined) this.finalUsage = true;
    }
  }

  private finish(): ModelStreamEvent[] {
    if (!this.stopReason)
      throw invalidStreamError(ANTHROPIC_PROVIDER, "message_stop without a stop_reason");
    this.result = anthropicEvidence(this.usage, this.finalUsage, this.requestTtl);
    return this.neutral.finish(this.stopReason, this.result, this.refusal);
  }

  private streamError(data: Record<string, unknown>): ProviderError {
    const fields = errorFields(data);
    return this.classify({
      provider: ANTHROPIC_PROVIDER,
      ...fields,
      message: fields.message ?? "error event",
      pristine: this.pristine,
    });
  }
}

/** Raw tool input: the joined deltas; no delta at all means the start block's input. */
function toolArguments(open: { json: string; start: JsonObject }): string {
  if (open.json.length > 0) return open.json;
  const input = open.start.input;
  return input && typeof input === "object" && Object.keys(input).length > 0
    ? JSON.stringify(input)
    : "{}";
}

function parseServerInput(open: { json: string; start: JsonObject; name: string }): JsonValue {
  if (open.json.trim() === "") return (open.start.input as JsonValue | undefined) ?? {};
  try {
    return JSON.parse(open.json) as JsonValue;
  } catch (error) {
    throw invalidStreamError(
      ANTHROPIC_PROVIDER,
      `server tool "${open.name}" input is not JSON`,
      error,
    );
  }
}

/** Results a server tool returned: a list's length, a tool search's references, 0 for an error. */
function resultCount(content: unknown): number {
  if (Array.isArray(content)) return content.length;
  const refs = asRecord(content)?.tool_references;
  return Array.isArray(refs) ? refs.length : 0;
}
