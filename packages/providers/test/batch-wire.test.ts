import { type ModelJobRequestItem, type ModelRequest, ProviderError } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { createAnthropicBatchTransport, createOpenAIBatchTransport } from "../src/index.js";
import { readFixture } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

const server = serverPerTest();
const json = (name: string) => ({
  status: 200,
  headers: { "content-type": "application/json" },
  body: readFixture(`batch/${name}`),
});
const jsonl = (name: string) => ({
  status: 200,
  headers: { "content-type": "application/binary" },
  body: readFixture(`batch/${name}`),
});

function request(model: string, text: string): ModelRequest {
  return {
    model,
    system: [{ type: "text", text: "Summarize the clinic day." }],
    messages: [{ role: "user", blocks: [{ type: "text", text }] }],
    tools: [],
    maxOutputTokens: 100,
    serviceTier: "batch",
    sensitivity: "confidential",
  };
}
const items = (model: string): ModelJobRequestItem[] =>
  ["day-1", "day-2", "day-3", "day-4"].map((customId) => ({
    customId,
    request: request(model, `notes of ${customId}`),
  }));
/** 2026-01-01T22:00:00Z: the submission started here (the listed batch says 22:00:01). */
const SINCE = Date.UTC(2026, 0, 1, 22);

describe("Anthropic Message Batches over fetch (documented shapes, served by a local server)", () => {
  const transport = () =>
    createAnthropicBatchTransport({ apiKey: "sk-test", baseURL: `${server.url}/v1`, fetch });

  it("submits every item once as the exact Messages body without stream, under its custom id, and reads the batch id", async () => {
    server.enqueue(json("anthropic/batch-created.json"));
    const t = transport();
    for (const item of items("claude-sonnet-4-5")) t.validate(item.request);
    expect(await t.submit("night-1", items("claude-sonnet-4-5"))).toEqual({
      batchId: "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF",
    });
    const [sent] = server.requests;
    expect(sent?.method).toBe("POST");
    expect(sent?.path).toBe("/v1/messages/batches");
    expect(sent?.headers["x-api-key"]).toBe("sk-test");
    expect(sent?.headers["anthropic-version"]).toBe("2023-06-01");
    expect((sent?.body as { requests: unknown[] } | undefined)?.requests[0]).toEqual({
      custom_id: "day-1",
      params: {
        model: "claude-sonnet-4-5",
        max_tokens: 100,
        system: [{ type: "text", text: "Summarize the clinic day." }],
        messages: [{ role: "user", content: [{ type: "text", text: "notes of day-1" }] }],
      },
    });
    expect(JSON.stringify(sent?.body)).not.toContain("stream");
    expect(JSON.stringify(sent?.body)).not.toContain("service_tier");
  });

  it("polls the processing status and reads the results, out of order, into neutral results", async () => {
    server.enqueue(
      json("anthropic/batch-created.json"),
      json("anthropic/batch-ended.json"),
      jsonl("anthropic/results.jsonl"),
    );
    const t = transport();
    expect(await t.poll("msgbatch_013Zva2CMHLNnXjNJJKqJ2EF")).toBe("in_progress");
    expect(await t.poll("msgbatch_013Zva2CMHLNnXjNJJKqJ2EF")).toBe("ended");
    const results = await t.results("msgbatch_013Zva2CMHLNnXjNJJKqJ2EF");
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "GET /v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF",
      "GET /v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF",
      "GET /v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF/results",
    ]);
    expect(results).toEqual([
      {
        customId: "day-2",
        type: "succeeded",
        stopReason: "tool_use",
        text: "Filing the summary.",
        toolCalls: [
          {
            id: "toolu_01BatchSummary",
            name: "file_summary",
            arguments: '{"clinic":"c-7","visits":12}',
          },
        ],
        usage: {
          inputTokens: 420,
          outputTokens: 61,
          cacheWrite5mTokens: 0,
          cacheWrite1hTokens: 0,
          cacheReadTokens: 0,
          serviceTier: "batch",
        },
      },
      {
        customId: "day-1",
        type: "succeeded",
        stopReason: "end_turn",
        text: "Hello! I'm doing well, thanks for asking. How are you doing today? Is there anything I can help you with?",
        toolCalls: [],
        usage: {
          inputTokens: 12,
          outputTokens: 29,
          cacheWrite5mTokens: 0,
          cacheWrite1hTokens: 0,
          cacheReadTokens: 0,
          serviceTier: "batch",
        },
      },
      { customId: "day-3", type: "errored", failure: "invalid_request" },
      { customId: "day-4", type: "expired" },
    ]);
  });

  it("a lost acknowledgement: the listing since the submission is matched by the items' custom ids once a candidate ended", async () => {
    // Newest first: a running candidate (cannot be read yet), ours (ended: its results match), then one older than the submission.
    server.enqueue(json("anthropic/batch-list.json"), jsonl("anthropic/results.jsonl"));
    const found = await transport().find("night-1", ["day-1", "day-2", "day-3", "day-4"], SINCE);
    expect(found).toEqual({ status: "found", batchId: "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF" });
    expect(server.requests.map((r) => r.path)).toEqual([
      "/v1/messages/batches?limit=100",
      "/v1/messages/batches/msgbatch_013Zva2CMHLNnXjNJJKqJ2EF/results",
    ]);
  });

  it("custom ids that match no ended candidate: unresolved while one still runs, absent when none could be ours", async () => {
    server.enqueue(json("anthropic/batch-list.json"), jsonl("anthropic/results.jsonl"));
    expect(await transport().find("night-9", ["other-1"], SINCE)).toEqual({ status: "unresolved" });
    server.enqueue(json("anthropic/batch-list.json"));
    expect(await transport().find("night-9", ["other-1"], Date.UTC(2026, 0, 2))).toEqual({
      status: "absent",
    });
  });

  it("a refused submission is a classified ProviderError without a rejection proof (the batch tier takes none)", async () => {
    server.enqueue({
      status: 429,
      headers: { "content-type": "application/json" },
      body: '{"type":"error","error":{"type":"rate_limit_error","message":"Number of batches exceeded"}}',
    });
    const error = await transport()
      .submit("night-1", items("claude-sonnet-4-5"))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: "rate_limited", provider: "anthropic", status: 429 });
    expect((error as ProviderError).rejection).toBeUndefined();
  });

  it("a body that is not the documented shape is a provider error, never a guess", async () => {
    server.enqueue(
      { status: 200, body: '{"processing_status":"paused"}' },
      { status: 200, body: '{"custom_id":"day-1","result":{"type":"partial"}}\n' },
    );
    await expect(transport().poll("msgbatch_x")).rejects.toMatchObject({ kind: "provider_error" });
    await expect(transport().results("msgbatch_x")).rejects.toMatchObject({
      kind: "provider_error",
    });
  });
});

describe("OpenAI Batch over fetch (documented shapes, served by a local server)", () => {
  const transport = () =>
    createOpenAIBatchTransport({ apiKey: "sk-test", baseURL: `${server.url}/v1`, fetch });

  it("uploads one JSONL file of Chat Completions bodies without stream, then creates the batch with the job id in its metadata", async () => {
    server.enqueue(json("openai/file-uploaded.json"), json("openai/batch-created.json"));
    const t = transport();
    for (const item of items("gpt-4.1-nano")) t.validate(item.request);
    expect(await t.submit("night-1", items("gpt-4.1-nano"))).toEqual({
      batchId: "batch_6807a1f1b2d48190a1c9c1f7e2e0d4a5",
    });
    const [upload, create] = server.requests;
    expect(`${upload?.method} ${upload?.path}`).toBe("POST /v1/files");
    expect(upload?.headers.authorization).toBe("Bearer sk-test");
    const form = String(upload?.body);
    expect(form).toContain('name="purpose"');
    expect(form).toContain("batch");
    const lines = form.split("\n").filter((l) => l.startsWith('{"custom_id"'));
    expect(lines.map((l) => JSON.parse(l))[0]).toEqual({
      custom_id: "day-1",
      method: "POST",
      url: "/v1/chat/completions",
      body: {
        model: "gpt-4.1-nano",
        messages: [
          { role: "system", content: "Summarize the clinic day." },
          { role: "user", content: "notes of day-1" },
        ],
        max_completion_tokens: 100,
      },
    });
    expect(lines).toHaveLength(4);
    expect(`${create?.method} ${create?.path}`).toBe("POST /v1/batches");
    expect(create?.body).toEqual({
      input_file_id: "file-4Kq1YwW3Z9bV2nP8xT6rLm",
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
      metadata: { alma_job: "night-1" },
    });
  });

  it("polls the status and reads the output and error files into neutral results", async () => {
    server.enqueue(
      json("openai/batch-created.json"),
      json("openai/batch-completed.json"),
      json("openai/batch-completed.json"),
      jsonl("openai/output.jsonl"),
      jsonl("openai/errors.jsonl"),
    );
    const t = transport();
    expect(await t.poll("batch_6807a1f1b2d48190a1c9c1f7e2e0d4a5")).toBe("in_progress");
    expect(await t.poll("batch_6807a1f1b2d48190a1c9c1f7e2e0d4a5")).toBe("ended");
    const results = await t.results("batch_6807a1f1b2d48190a1c9c1f7e2e0d4a5");
    expect(server.requests.slice(3).map((r) => r.path)).toEqual([
      "/v1/files/file-7Ht2Qd9Xc4Rz1Vb6Np3Kw8/content",
      "/v1/files/file-2Lm5Sx8Cv1Bn4Qz7Wr0Ty3/content",
    ]);
    expect(results.map((r) => [r.customId, r.type])).toEqual([
      ["day-1", "succeeded"],
      ["day-2", "succeeded"],
      ["day-3", "errored"],
      ["day-4", "expired"],
    ]);
    expect(results[0]).toMatchObject({
      stopReason: "end_turn",
      usage: { inputTokens: 16, outputTokens: 363, serviceTier: "batch" },
    });
    expect((results[0] as { text: string }).text.startsWith("**Holiday Name:** Galaxy Day")).toBe(
      true,
    );
    expect(results[1]).toMatchObject({
      stopReason: "tool_use",
      toolCalls: [
        { id: "call_batch_01", name: "file_summary", arguments: '{"clinic":"c-7","visits":12}' },
      ],
      usage: { inputTokens: 384, cacheReadTokens: 128, outputTokens: 24, serviceTier: "batch" },
    });
    expect(results[2]).toEqual({ customId: "day-3", type: "errored", failure: "invalid_request" });
  });

  it("a lost acknowledgement is found by the job id in the listed batches' metadata; another job's batch is not", async () => {
    server.enqueue(json("openai/batch-list.json"));
    expect(await transport().find("night-1", [], Date.UTC(2026, 0, 1, 22))).toEqual({
      status: "found",
      batchId: "batch_6807a1f1b2d48190a1c9c1f7e2e0d4a5",
    });
    server.enqueue(json("openai/batch-list.json"));
    expect(await transport().find("night-7", [], Date.UTC(2026, 0, 1, 22))).toEqual({
      status: "absent",
    });
    expect(server.requests.map((r) => r.path)).toEqual([
      "/v1/batches?limit=100",
      "/v1/batches?limit=100",
    ]);
  });

  it("a refused upload or create is a classified ProviderError without a rejection proof", async () => {
    server.enqueue({
      status: 429,
      headers: { "content-type": "application/json" },
      body: '{"error":{"message":"Enqueued token limit reached","type":"tokens","code":"rate_limit_exceeded"}}',
    });
    const error = await transport()
      .submit("night-1", items("gpt-4.1-nano"))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "rate_limited", provider: "openai", status: 429 });
    expect((error as ProviderError).rejection).toBeUndefined();
  });
});
