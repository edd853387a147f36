import type {
  ModelJobBatchStatus,
  ModelJobFound,
  ModelJobItemResult,
  ModelJobRequestItem,
  ModelJobTransport,
  ModelRequest,
  StreamToolCall,
} from "@alma-harness/core";
import {
  classifyOpenAI,
  createOpenAIChatClient,
  DEFAULT_OPENAI_BASE_URL,
  OPENAI_PROVIDER,
  type OpenAIClientOptions,
  openaiHeaders,
} from "../openai-chat/client.js";
import { buildChatBody } from "../openai-chat/request.js";
import { chatStopReason } from "../openai-chat/stop-reason.js";
import { chatEvidence } from "../openai-chat/usage.js";
import type { ChatWireUsage } from "../openai-chat/wire.js";
import { joinUrl } from "../shared/http.js";
import { asCount, asRecord, asString } from "../shared/neutral.js";
import {
  type BatchCall,
  createBatch,
  getJson,
  itemFailure,
  jsonLines,
  malformed,
  objectOf,
  oncePerItem,
  send,
  unbatched,
} from "./http.js";
import { type ListingWindow, listedSince } from "./listing.js";

export type OpenAIBatchOptions = Pick<
  OpenAIClientOptions,
  | "apiKey"
  | "baseURL"
  | "fetch"
  | "headers"
  | "now"
  | "organization"
  | "project"
  | "reasoningModels"
> & {
  readonly id?: string;
  /** How far before the submission a listed batch may say it was created (clock skew), default 5 minutes. */
  readonly skewMs?: number;
  /** At most this many pages of the batch listing are read while reconciling (default 10, 100 batches each). */
  readonly maxListPages?: number;
};

/** The metadata key that carries the job's id on the wire: how a lost acknowledgement is found again. */
export const OPENAI_JOB_METADATA_KEY = "alma_job";
const ENDPOINT = "/v1/chat/completions";
const STATUS: Readonly<Record<string, ModelJobBatchStatus>> = {
  validating: "in_progress",
  in_progress: "in_progress",
  finalizing: "in_progress",
  cancelling: "canceling",
  completed: "ended",
  expired: "ended",
  cancelled: "ended",
  failed: "failed",
};

/** Where an OpenAI batch call goes: the batch call's settings and the API's base URL. */
interface OpenAIWire {
  readonly call: BatchCall;
  readonly base: string;
}

/**
 * OpenAI Batch over `fetch` (`/v1/files` then `/v1/batches`, no SDK), on the Chat Completions
 * endpoint: each item is one JSONL line `{custom_id, method, url, body}` whose body is the exact
 * Chat Completions body the streaming adapter would send, without `stream`. The batch carries the
 * job's id in its metadata (`alma_job`), so a lost acknowledgement is found by listing the batches
 * created since the submission. An upload whose answer was lost leaves an unused file, never a batch.
 */
export function createOpenAIBatchTransport(options: OpenAIBatchOptions = {}): ModelJobTransport {
  const chat = createOpenAIChatClient({ ...options, id: options.id ?? "openai-batch" });
  const wire: OpenAIWire = {
    base: options.baseURL ?? DEFAULT_OPENAI_BASE_URL,
    call: {
      provider: OPENAI_PROVIDER,
      fetch: options.fetch ?? globalThis.fetch,
      now: options.now ?? Date.now,
      classify: (f) => classifyOpenAI(f),
      headers: openaiHeaders(options),
    },
  };
  const skewMs = options.skewMs ?? 300_000;
  const maxPages = options.maxListPages ?? 10;
  return {
    id: options.id ?? "openai-batch",
    provider: OPENAI_PROVIDER,
    validate: (request) => chat.validate(unbatched(request)),
    submit: (jobId: string, items: readonly ModelJobRequestItem[], signal?: AbortSignal) =>
      submitBatch(wire, jobId, items, signal),
    find: (jobId: string, _customIds: readonly string[], since: number, signal?: AbortSignal) =>
      findByMetadata(wire, jobId, { since, skewMs, maxPages }, signal),
    async poll(batchId: string, signal?: AbortSignal) {
      const batch = await getObject(
        wire,
        `batches/${encodeURIComponent(batchId)}`,
        "the batch",
        signal,
      );
      const status = STATUS[asString(batch.status) ?? ""];
      if (!status)
        throw malformed(OPENAI_PROVIDER, `unknown batch status ${JSON.stringify(batch.status)}`);
      return status;
    },
    async results(batchId: string, signal?: AbortSignal) {
      const batch = await getObject(
        wire,
        `batches/${encodeURIComponent(batchId)}`,
        "the batch",
        signal,
      );
      const lines = [
        ...(await fileLines(wire, batch.output_file_id, signal)),
        ...(await fileLines(wire, batch.error_file_id, signal)),
      ];
      return oncePerItem(OPENAI_PROVIDER, lines.map(resultOf));
    },
  };
}

function getObject(
  wire: OpenAIWire,
  path: string,
  what: string,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  return getJson(wire.call, joinUrl(wire.base, path), what, signal);
}

/** The lines of an output or error file; a batch that names no such file has none. */
async function fileLines(
  wire: OpenAIWire,
  fileId: unknown,
  signal?: AbortSignal,
): Promise<Record<string, unknown>[]> {
  const id = asString(fileId);
  if (!id) return [];
  return jsonLines(
    OPENAI_PROVIDER,
    await send(wire.call, joinUrl(wire.base, `files/${encodeURIComponent(id)}/content`), {
      method: "GET",
      ...(signal ? { signal } : {}),
    }),
    "batch output",
  );
}

/** Uploads the items as one JSONL file, then creates the batch over it with the job's id in its metadata. */
async function submitBatch(
  wire: OpenAIWire,
  jobId: string,
  items: readonly ModelJobRequestItem[],
  signal?: AbortSignal,
): Promise<{ readonly batchId: string }> {
  const jsonl = `${items.map((i) => JSON.stringify({ custom_id: i.customId, method: "POST", url: ENDPOINT, body: batchBody(i.request) })).join("\n")}\n`;
  const form = new FormData();
  form.append("purpose", "batch");
  form.append("file", new Blob([jsonl], { type: "application/jsonl" }), `${jobId}.jsonl`);
  const file = objectOf(
    OPENAI_PROVIDER,
    await send(wire.call, joinUrl(wire.base, "files"), {
      method: "POST",
      form,
      ...(signal ? { signal } : {}),
    }),
    "the uploaded file",
  );
  const fileId = asString(file.id);
  if (!fileId) throw malformed(OPENAI_PROVIDER, "the uploaded file has no id");
  const create = {
    input_file_id: fileId,
    endpoint: ENDPOINT,
    completion_window: "24h",
    metadata: { [OPENAI_JOB_METADATA_KEY]: jobId },
  };
  return createBatch(wire.call, joinUrl(wire.base, "batches"), create, signal);
}

/** The job's batch among those listed since the submission, by the job id in its metadata. */
async function findByMetadata(
  wire: OpenAIWire,
  jobId: string,
  window: ListingWindow,
  signal?: AbortSignal,
): Promise<ModelJobFound> {
  const page = (after: string | undefined) =>
    getObject(
      wire,
      `batches?limit=100${after ? `&after=${encodeURIComponent(after)}` : ""}`,
      "the batch listing",
      signal,
    );
  const createdAt = (batch: Record<string, unknown>) => (asCount(batch.created_at) ?? 0) * 1000;
  const mine: string[] = [];
  for await (const batch of listedSince(window, page, createdAt)) {
    const id = asString(batch.id);
    if (id && asRecord(batch.metadata)?.[OPENAI_JOB_METADATA_KEY] === jobId) mine.push(id);
  }
  if (mine.length === 1) return { status: "found", batchId: mine[0] as string };
  // Two batches under one job id were never sent by this client: an operator decides.
  return { status: mine.length === 0 ? "absent" : "unresolved" };
}

/** The exact Chat Completions body the streaming adapter would send, without streaming. */
function batchBody(request: ModelRequest): Record<string, unknown> {
  const {
    stream: _s,
    stream_options: _o,
    ...rest
  } = buildChatBody(unbatched(request), {
    maxTokensField: "max_completion_tokens",
    streamUsage: false,
  }) as unknown as Record<string, unknown>;
  if (request.reasoning) rest.reasoning_effort = request.reasoning;
  if (request.cacheKey !== undefined) rest.prompt_cache_key = request.cacheKey;
  return rest;
}

/** One output or error line → the neutral result. */
function resultOf(line: Record<string, unknown>): ModelJobItemResult {
  const customId = asString(line.custom_id);
  if (!customId) throw malformed(OPENAI_PROVIDER, "a batch output line has no custom_id");
  const error = asRecord(line.error);
  const response = asRecord(line.response);
  if (error) {
    const code = asString(error.code);
    if (code === "batch_expired") return { customId, type: "expired" };
    if (code === "batch_cancelled") return { customId, type: "canceled" };
    return { customId, type: "errored", failure: itemFailure(code) };
  }
  const status = asCount(response?.status_code);
  const completion = asRecord(response?.body);
  if (status !== 200 || !completion)
    return {
      customId,
      type: "errored",
      failure: itemFailure(asString(asRecord(asRecord(completion)?.error)?.type), status),
    };
  const choice = asRecord(Array.isArray(completion.choices) ? completion.choices[0] : undefined);
  const message = asRecord(choice?.message);
  if (!message) throw malformed(OPENAI_PROVIDER, `result ${customId} has no message`);
  const toolCalls: StreamToolCall[] = (
    Array.isArray(message.tool_calls) ? message.tool_calls : []
  ).map((raw) => {
    const c = asRecord(raw);
    const fn = asRecord(c?.function);
    return {
      id: asString(c?.id) ?? "",
      name: asString(fn?.name) ?? "",
      arguments: asString(fn?.arguments) ?? "",
    };
  });
  const refused = typeof message.refusal === "string" && message.refusal.length > 0;
  const stopReason = refused
    ? "refusal"
    : chatStopReason(asString(choice?.finish_reason) ?? "", toolCalls.length > 0);
  // The Batch API is the batch tier whatever the body's `service_tier` says.
  const evidence = chatEvidence(asRecord(completion.usage) as ChatWireUsage | undefined, {
    tier: "batch",
  });
  if (evidence.status !== "known" && evidence.status !== "unpriced")
    throw malformed(OPENAI_PROVIDER, `result ${customId} carries no usage`);
  return {
    customId,
    type: "succeeded",
    stopReason,
    text: asString(message.content) ?? "",
    toolCalls,
    usage: evidence.usage,
    ...(evidence.status === "unpriced" ? { usageUnresolved: evidence.reason } : {}),
    ...(stopReason === "refusal" ? { refusal: "unspecified" as const } : {}),
  };
}
