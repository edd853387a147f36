import {
  type JsonObject,
  type ModelStreamEvent,
  type ProviderError,
  SEARCH_TOOLS_NAME,
  type UsageEvidence,
} from "@alma-harness/core";
import type { EventSourceMessage } from "eventsource-parser";
import { type ErrorFacts, errorFields, tornError } from "../shared/errors.js";
import {
  asRecord,
  asString,
  NeutralStream,
  parseData,
  type StreamTransform,
} from "../shared/neutral.js";
import { RESPONSES_PROVIDER } from "./messages.js";
import { responsesStopReason } from "./stop-reason.js";
import { responsesEvidence } from "./usage.js";
import type { ResponsesWireUsage } from "./wire.js";

/**
 * Responses events → neutral events. Text and reasoning summaries stream as deltas; function
 * calls are released at `output_item.done` with the item's final arguments; a reasoning item
 * closes with its id and encrypted content (replay data); a `web_search_call` becomes a provider
 * tool call and result; a client-executed `tool_search_call` is a `search_tools` call.
 * `response.completed` / `response.incomplete` end the stream; `error` and
 * `response.failed` throw. Unknown events are ignored.
 */
export class ResponsesTransform implements StreamTransform {
  private readonly neutral = new NeutralStream(RESPONSES_PROVIDER);
  private readonly args = new Map<string, string>();
  private lastSummary = new Map<string, number>();
  private searches = 0;
  private started = false;
  private refused = false;
  private result: UsageEvidence = { status: "unknown" };

  constructor(
    private readonly classify: (facts: ErrorFacts) => ProviderError,
    private readonly countSearches: boolean,
  ) {}

  get done(): boolean {
    return this.neutral.completed;
  }

  get pristine(): boolean {
    return this.neutral.empty;
  }

  evidence(): UsageEvidence {
    return this.result;
  }

  push(message: EventSourceMessage): ModelStreamEvent[] {
    const data = parseData(message, RESPONSES_PROVIDER);
    const out: ModelStreamEvent[] = [];
    const type = asString(data.type) ?? message.event ?? "";
    switch (type) {
      case "response.created":
      case "response.in_progress":
        this.started = true;
        break;
      case "response.output_text.delta":
        this.neutral.textDelta(asString(data.delta) ?? "", out);
        break;
      case "response.refusal.delta":
        // A refusal part is the model declining, not an answer: the response stops as `refusal`.
        this.refused = true;
        this.neutral.textDelta(asString(data.delta) ?? "", out);
        break;
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        this.reasoningDelta(data, out);
        break;
      case "response.function_call_arguments.delta": {
        const id = asString(data.item_id) ?? "";
        this.args.set(id, (this.args.get(id) ?? "") + (asString(data.delta) ?? ""));
        break;
      }
      case "response.output_item.done":
        this.itemDone(asRecord(data.item), out);
        break;
      case "response.completed":
      case "response.incomplete":
        return this.finish(
          asRecord(data.response),
          type === "response.completed" ? "completed" : "incomplete",
        );
      case "response.failed":
        throw this.failure(asRecord(asRecord(data.response)?.error) ?? {});
      case "error":
        throw this.failure(data);
      default:
        break;
    }
    return out;
  }

  end(): ModelStreamEvent[] {
    throw tornError(
      RESPONSES_PROVIDER,
      this.started ? "no response.completed" : "no response.created",
    );
  }

  /** Summary parts of one item are joined by a blank line, as one reasoning block. */
  private reasoningDelta(data: Record<string, unknown>, out: ModelStreamEvent[]): void {
    const item = asString(data.item_id) ?? "";
    const part = typeof data.summary_index === "number" ? data.summary_index : 0;
    const last = this.lastSummary.get(item);
    if (last !== undefined && last !== part) this.neutral.reasoning("\n\n", {}, out);
    this.lastSummary.set(item, part);
    this.neutral.reasoning(asString(data.delta) ?? "", {}, out);
  }

  private itemDone(item: Record<string, unknown> | undefined, out: ModelStreamEvent[]): void {
    if (!item) return;
    const id = asString(item.id) ?? "";
    switch (item.type) {
      case "function_call":
        this.neutral.toolCall({
          id: asString(item.call_id) ?? id,
          name: asString(item.name) ?? "",
          arguments: asString(item.arguments) ?? this.args.get(id) ?? "",
        });
        break;
      case "tool_search_call":
        // A client-executed tool search is the engine's search_tools (we never send the hosted one).
        if (item.execution === "client") {
          this.neutral.toolCall({
            id: asString(item.call_id) ?? id,
            name: SEARCH_TOOLS_NAME,
            arguments: asString(item.arguments) ?? JSON.stringify(asRecord(item.arguments) ?? {}),
          });
        }
        break;
      case "reasoning": {
        const encrypted = asString(item.encrypted_content);
        this.neutral.reasoning(
          "",
          { signature: id, ...(encrypted ? { redacted: encrypted } : {}) },
          out,
        );
        break;
      }
      case "web_search_call": {
        const action = asRecord(item.action);
        const sources = Array.isArray(action?.sources) ? action.sources : [];
        if (action?.type === undefined || action.type === "search") this.searches += 1;
        this.neutral.providerCall(id, "web_search", item as JsonObject, out);
        this.neutral.providerResult(
          id,
          "web_search",
          sources.length,
          { status: asString(item.status) ?? "completed", sources: sources as JsonObject[] },
          out,
        );
        break;
      }
      default:
        break;
    }
  }

  private finish(
    response: Record<string, unknown> | undefined,
    status: "completed" | "incomplete",
  ): ModelStreamEvent[] {
    const reason = asString(asRecord(response?.incomplete_details)?.reason);
    const stop =
      this.refused || refusalPart(response)
        ? "refusal"
        : responsesStopReason(status, reason, this.neutral.hasToolCalls);
    const usage = asRecord(response?.usage) as ResponsesWireUsage | undefined;
    this.result = responsesEvidence(
      usage,
      response?.service_tier,
      this.countSearches ? this.searches : undefined,
    );
    return this.neutral.finish(stop, this.result, stop === "refusal" ? "unspecified" : undefined);
  }

  private failure(error: Record<string, unknown>): ProviderError {
    const fields = errorFields({ error: asRecord(error.error) ?? error });
    return this.classify({
      provider: RESPONSES_PROVIDER,
      ...fields,
      message: fields.message ?? "response failed",
      pristine: this.pristine,
    });
  }
}

/** Whether the final response holds a `refusal` content part (when no refusal delta streamed). */
function refusalPart(response: Record<string, unknown> | undefined): boolean {
  const output = Array.isArray(response?.output) ? response.output : [];
  return output.some((item) => {
    const content = asRecord(item)?.content;
    return Array.isArray(content) && content.some((part) => asRecord(part)?.type === "refusal");
  });
}
