import type { JsonSchema } from "@alma-harness/core";
import { ProviderError } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import {
  createAnthropicClient,
  createOpenAIChatClient,
  createOpenAIResponsesClient,
} from "../src/index.js";
import { strictEligible } from "../src/shared/strict.js";
import { baseRequest, collect, terminal, textOfEvents, usageEvidence } from "./helpers/collect.js";
import { chunkLines, toSse } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

const server = serverPerTest();

/** A schema the recorded Anthropic answer satisfies, closed at every level (strict-eligible). */
const CHARACTERS: JsonSchema = {
  type: "object",
  properties: {
    characters: {
      type: "array",
      items: {
        type: "object",
        properties: {
          name: { type: "string" },
          class: { type: "string", enum: ["warrior", "mage", "thief"] },
          description: { type: "string" },
        },
        required: ["name", "class", "description"],
        additionalProperties: false,
      },
    },
  },
  required: ["characters"],
  additionalProperties: false,
};
/** The same with an optional property and a keyword strict mode does not take: sent without strict. */
const LOOSE: JsonSchema = {
  type: "object",
  properties: { name: { type: "string", minLength: 1 }, nickname: { type: "string" } },
  required: ["name"],
};

const anthropic = (models?: NonNullable<Parameters<typeof createAnthropicClient>[0]>["models"]) =>
  createAnthropicClient({
    apiKey: "sk-ant-test",
    baseURL: `${server.url}/v1`,
    ...(models ? { models } : {}),
  });

describe("Anthropic native JSON output (output_config.format), recorded traffic", () => {
  it("sends the schema as output_config.format and streams the recorded JSON answer as text", async () => {
    server.enqueue({
      body: toSse(chunkLines("anthropic/anthropic-json-output-format.1.chunks.txt"), {
        named: true,
      }),
      split: "awkward",
    });
    const events = await collect(
      anthropic(),
      baseRequest("claude-sonnet-4-5", {
        output: { name: "characters", schema: CHARACTERS },
        temperature: 0,
      }),
    );
    const body = server.requests.at(-1)?.body as Record<string, unknown>;
    expect(body).toEqual({
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }],
      temperature: 0,
      output_config: { format: { type: "json_schema", schema: CHARACTERS } },
      stream: true,
    });
    // The earlier beta form is not sent: no top-level output_format, no beta header.
    expect(server.requests.at(-1)?.headers["anthropic-beta"]).toBeUndefined();
    const end = terminal(events);
    expect(end.stopReason).toBe("end_turn");
    const answer = JSON.parse(textOfEvents(events)) as {
      characters: { name: string; class: string }[];
    };
    expect(answer.characters.map((c) => [c.name, c.class])).toEqual([
      ["Theron Ironheart", "warrior"],
      ["Lyra Starweaver", "mage"],
      ["Rook Shadowstep", "thief"],
    ]);
    expect(usageEvidence(events)).toMatchObject({
      status: "known",
      usage: { inputTokens: 313, outputTokens: 305 },
    });
  });

  it("refuses an output schema before any I/O on a model without structured outputs, unless the host says it has them", () => {
    const request = (model: string) =>
      baseRequest(model, { output: { name: "characters", schema: CHARACTERS } });
    for (const model of [
      "claude-3-5-haiku-20241022",
      "claude-sonnet-4-20250514",
      "claude-fable-5-1",
      "my-proxy-model",
    ]) {
      expect(() => anthropic().validate(request(model))).toThrow(ProviderError);
    }
    for (const model of [
      "claude-opus-4-1",
      "claude-haiku-4-5",
      "claude-sonnet-4-6",
      "claude-opus-5-5",
    ])
      expect(() => anthropic().validate(request(model))).not.toThrow();
    expect(() =>
      anthropic(() => ({ structuredOutput: true })).validate(request("my-proxy-model")),
    ).not.toThrow();
    expect(server.requests).toHaveLength(0);
  });
});

describe("OpenAI json_schema output: strict where the schema allows it", () => {
  it("Chat Completions: response_format.json_schema with strict true for a closed schema, strict false otherwise", async () => {
    const TEXT = toSse(chunkLines("openai/openai-text.chunks.txt"), { named: false, done: true });
    const chat = createOpenAIChatClient({ apiKey: "sk-test", baseURL: `${server.url}/v1` });
    server.enqueue({ body: TEXT }, { body: TEXT });
    await collect(
      chat,
      baseRequest("gpt-4.1-nano", { output: { name: "characters", schema: CHARACTERS } }),
    );
    await collect(chat, baseRequest("gpt-4.1-nano", { output: { name: "loose", schema: LOOSE } }));
    const [strict, loose] = server.requests.map(
      (r) => (r.body as { response_format: unknown }).response_format,
    );
    expect(strict).toEqual({
      type: "json_schema",
      json_schema: { name: "characters", schema: CHARACTERS, strict: true },
    });
    expect(loose).toEqual({
      type: "json_schema",
      json_schema: { name: "loose", schema: LOOSE, strict: false },
    });
  });

  it("Responses: text.format json_schema with strict true for a closed schema, strict false otherwise", async () => {
    const lines = chunkLines("openai/openai-reasoning-encrypted-content.1.chunks.txt");
    const firstEnd = lines.findIndex((l) => l.includes('"type":"response.completed"'));
    const ONE = toSse(lines.slice(0, firstEnd + 1), { named: true });
    const responses = createOpenAIResponsesClient({
      apiKey: "sk-test",
      baseURL: `${server.url}/v1`,
    });
    server.enqueue({ body: ONE }, { body: ONE });
    await collect(
      responses,
      baseRequest("gpt-5.1-codex-max", { output: { name: "characters", schema: CHARACTERS } }),
    );
    await collect(
      responses,
      baseRequest("gpt-5.1-codex-max", { output: { name: "loose", schema: LOOSE } }),
    );
    const [strict, loose] = server.requests.map((r) => (r.body as { text: unknown }).text);
    expect(strict).toEqual({
      format: { type: "json_schema", name: "characters", schema: CHARACTERS, strict: true },
    });
    expect(loose).toEqual({
      format: { type: "json_schema", name: "loose", schema: LOOSE, strict: false },
    });
  });

  it("strictEligible: closed objects with every property required, documented keywords only, an object root, at most 10 levels", () => {
    expect(strictEligible(CHARACTERS)).toBe(true);
    expect(strictEligible(LOOSE)).toBe(false);
    expect(
      strictEligible({ type: "object", properties: { a: { type: "string" } }, required: ["a"] }),
    ).toBe(false);
    expect(
      strictEligible({
        type: "object",
        properties: { a: { type: ["string", "null"] } },
        required: ["a"],
        additionalProperties: false,
      }),
    ).toBe(true);
    expect(
      strictEligible({
        type: "object",
        anyOf: [],
        properties: {},
        required: [],
        additionalProperties: false,
      }),
    ).toBe(false);
    expect(
      strictEligible({
        type: "object",
        properties: { a: { allOf: [] } },
        required: ["a"],
        additionalProperties: false,
      }),
    ).toBe(false);
    let deep: JsonSchema = { type: "string" };
    for (let i = 0; i < 12; i++)
      deep = {
        type: "object",
        properties: { x: deep },
        required: ["x"],
        additionalProperties: false,
      };
    expect(strictEligible(deep)).toBe(false);
  });
});
