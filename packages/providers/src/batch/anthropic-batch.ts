import type {
  ModelJobBatchStatus,
  ModelJobFound,
  ModelJobItemResult,
  ModelJobRequestItem,
  ModelJobTransport,
  ModelRequest,
  StreamToolCall,
} from "@alma-harness/core";
import { refusalCategory } from "@alma-harness/core";
import {
  type AnthropicClientOptions,
  anthropicHeaders,
  classifyAnthropic,
  createAnthropicClient,
  DEFAULT_ANTHROPIC_BASE_URL,
} from "../anthropic/client.js";
import { ANTHROPIC_PROVIDER } from "../anthropic/messages.js";
import { defaultAnthropicTraits } from "../anthropic/models.js";
import { buildAnthropicBody } from "../anthropic/request.js";
import { anthropicStopReason } from "../anthropic/stop-reason.js";
import { DEFAULT_WEB_SEARCH_TOOL } from "../anthropic/tools.js";
import { anthropicEvidence } from "../anthropic/usage.js";
import type { WireUsage } from "../anthropic/wire.js";
import { joinUrl } from "../shared/http.js";
import { asRecord, asString } from "../shared/neutral.js";
import {
  type BatchCall,
  createBatch,
  itemFailure,
  jsonLines,
  getJson,
  malformed,
  oncePerItem,
  send,
  unbatched,
} from "./http.js";
import { type ListingWindow, listedSince } from "./listing.js";

export type AnthropicBatchOptions = Pick<
  AnthropicClientOptions,
  "apiKey" | "baseURL" | "fetch" | "headers" | "now" | "betas" | "models" | "webSearchToolType"
> & {
  readonly id?: string;
  /** How far before the submission a listed batch may say it was created (clock skew), default 5 minutes. */
  readonly skewMs?: number;
  /** At most this many pages of the batch listing are read while reconciling (default 10, 100 batches each). */
  readonly maxListPages?: number;
};

const PROCESSING: Readonly<Record<string, ModelJobBatchStatus>> = {
  in_progress: "in_progress",
  canceling: "canceling",
  ended: "ended",
};

/** Where an Anthropic batch call goes: the batch call's settings and the batches endpoint. */
interface AnthropicWire {
  readonly call: BatchCall;
  readonly base: string;
}

/**
 * Anthropic Message Batches over `fetch` (`/v1/messages/batches`, no SDK): each item is the exact
 * `/v1/messages` body the streaming adapter would send, without `stream`, under its `custom_id`.
 * The wire carries no metadata, so a lost acknowledgement is matched by the items' custom ids: a
 * candidate created since the submission is read once it has ended, and found only when its
 * results answer exactly the job's custom ids; a candidate still running leaves it `unresolved`.
 */
export function createAnthropicBatchTransport(
  options: AnthropicBatchOptions = {},
): ModelJobTransport {
  const messages = createAnthropicClient({ ...options, id: options.id ?? "anthropic-batch" });
  const wire: AnthropicWire = {
    base: joinUrl(options.baseURL ?? DEFAULT_ANTHROPIC_BASE_URL, "messages/batches"),
    call: {
      provider: ANTHROPIC_PROVIDER,
      fetch: options.fetch ?? globalThis.fetch,
      now: options.now ?? Date.now,
      classify: classifyAnthropic,
      headers: anthropicHeaders(options),
    },
  };
  const traitsOf = (model: string) => ({
    ...defaultAnthropicTraits(model),
    ...options.models?.(model),
  });
  const webSearchType = options.webSearchToolType ?? DEFAULT_WEB_SEARCH_TOOL;
  const skewMs = options.skewMs ?? 300_000;
  const maxPages = options.maxListPages ?? 10;
  const params = (request: ModelRequest) => {
    const { stream: _stream, ...body } = buildAnthropicBody(unbatched(request), {
      traits: traitsOf(request.model),
      webSearchType,
    });
    return body;
  };
  return {
    id: options.id ?? "anthropic-batch",
    provider: ANTHROPIC_PROVIDER,
    // The Messages adapter's own rules; the batch tier is the endpoint's, not a request field.
    validate: (request) => messages.validate(unbatched(request)),
    async submit(_jobId: string, items: readonly ModelJobRequestItem[], signal?: AbortSignal) {
      const body = {
        requests: items.map((i) => ({ custom_id: i.customId, params: params(i.request) })),
      };
      return createBatch(wire.call, wire.base, body, signal);
    },
    find: (_jobId: string, customIds: readonly string[], since: number, signal?: AbortSignal) =>
      findByCustomIds(wire, customIds, { since, skewMs, maxPages }, signal),
    poll: (batchId: string, signal?: AbortSignal) => pollBatch(wire, batchId, signal),
    results: (batchId: string, signal?: AbortSignal) => batchResults(wire, batchId, signal),
  };
}

async function batchResults(
  wire: AnthropicWire,
  batchId: string,
  signal?: AbortSignal,
): Promise<readonly ModelJobItemResult[]> {
  const text = await send(wire.call, `${wire.base}/${encodeURIComponent(batchId)}/results`, {
    method: "GET",
    ...(signal ? { signal } : {}),
  });
  return oncePerItem(
    ANTHROPIC_PROVIDER,
    jsonLines(ANTHROPIC_PROVIDER, text, "batch results").map(resultOf),
  );
}

async function pollBatch(
  wire: AnthropicWire,
  batchId: string,
  signal?: AbortSignal,
): Promise<ModelJobBatchStatus> {
  const batch = await getJson(
    wire.call,
    `${wire.base}/${encodeURIComponent(batchId)}`,
    "the batch",
    signal,
  );
  const status = PROCESSING[asString(batch.processing_status) ?? ""];
  if (!status)
    throw malformed(
      ANTHROPIC_PROVIDER,
      `unknown processing_status ${JSON.stringify(batch.processing_status)}`,
    );
  return status;
}

/**
 * The job's batch among those listed since the submission: an ended one whose results answer
 * exactly the job's custom ids. One still running might be it, so nothing found then is `unresolved`.
 */
async function findByCustomIds(
  wire: AnthropicWire,
  customIds: readonly string[],
  window: ListingWindow,
  signal?: AbortSignal,
): Promise<ModelJobFound> {
  const wanted = [...customIds].sort().join("\n");
  const page = (after: string | undefined) =>
    getJson(
      wire.call,
      `${wire.base}?limit=100${after ? `&after_id=${encodeURIComponent(after)}` : ""}`,
      "the batch listing",
      signal,
    );
  const createdAt = (batch: Record<string, unknown>) =>
    Date.parse(asString(batch.created_at) ?? "");
  let pending = false;
  for await (const batch of listedSince(window, page, createdAt)) {
    const id = asString(batch.id);
    if (!id) continue;
    if (batch.processing_status !== "ended") {
      pending = true;
      continue;
    }
    const answered = (await batchResults(wire, id, signal))
      .map((r) => r.customId)
      .sort()
      .join("\n");
    if (answered === wanted) return { status: "found", batchId: id };
  }
  return { status: pending ? "unresolved" : "absent" };
}

/** One results line → the neutral result (the message's text, tool calls, stop reason and usage). */
function resultOf(line: Record<string, unknown>): ModelJobItemResult {
  const customId = asString(line.custom_id);
  const result = asRecord(line.result);
  if (!customId || !result)
    throw malformed(ANTHROPIC_PROVIDER, "a results line has no custom_id or result");
  const type = asString(result.type);
  if (type === "errored") {
    const error = asRecord(asRecord(result.error)?.error) ?? asRecord(result.error);
    return { customId, type: "errored", failure: itemFailure(error?.type) };
  }
  if (type === "canceled" || type === "expired") return { customId, type };
  if (type !== "succeeded")
    throw malformed(ANTHROPIC_PROVIDER, `unknown result type ${JSON.stringify(type)}`);
  const message = asRecord(result.message);
  if (!message || !Array.isArray(message.content))
    throw malformed(ANTHROPIC_PROVIDER, "a succeeded result has no message");
  let text = "";
  const toolCalls: StreamToolCall[] = [];
  for (const block of message.content.map(asRecord)) {
    if (block?.type === "text") text += asString(block.text) ?? "";
    else if (block?.type === "tool_use")
      toolCalls.push({
        id: asString(block.id) ?? "",
        name: asString(block.name) ?? "",
        arguments: JSON.stringify(block.input ?? {}),
      });
  }
  const stopReason = anthropicStopReason(asString(message.stop_reason) ?? "");
  const evidence = anthropicEvidence((asRecord(message.usage) ?? {}) as WireUsage, true, undefined);
  if (evidence.status !== "known" && evidence.status !== "unpriced")
    throw malformed(ANTHROPIC_PROVIDER, `result ${customId} carries no usage`);
  const refusal =
    stopReason === "refusal"
      ? { refusal: refusalCategory(asRecord(message.stop_details)?.category) }
      : {};
  return {
    customId,
    type: "succeeded",
    stopReason,
    text,
    toolCalls,
    usage: evidence.usage,
    ...(evidence.status === "unpriced" ? { usageUnresolved: evidence.reason } : {}),
    ...refusal,
  };
}
