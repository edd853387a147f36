import type { ModelClient, ModelRequest, Msg } from "@alma-harness/core";
import { collectStep, type StepOutput } from "@alma-harness/execution";
import { createAnthropicClient, createOpenAIResponsesClient } from "@alma-harness/providers";
import { describe, expect, it } from "vitest";
import { cassette, chunkLines, toSse } from "../../providers/test/helpers/fixtures.js";
import { serverPerTest } from "../../providers/test/helpers/server.js";

/**
 * A session that switches provider and model between turns, on recorded traffic over a real local
 * socket, through the governed call's own stream validation (`collectStep`, which stamps each
 * reasoning block with the client's provider and the request's model) and the real adapters.
 * Issue 19, findings 1 (provenance) and 2 (consecutive thinking blocks stay separate).
 */
const server = serverPerTest();

const anthropic = () => createAnthropicClient({ apiKey: "test-key", baseURL: `${server.url}/v1` });
const responses = () =>
  createOpenAIResponsesClient({ apiKey: "sk-test", baseURL: `${server.url}/v1` });

const SONNET = "claude-sonnet-4-5-20250929";
const CODEX = "gpt-5.1-codex-max";
const calculator = {
  name: "calculator",
  description: "Calculate",
  inputSchema: { type: "object" },
};

/** One model round as the governed call runs it: stream validated, reasoning stamped. */
async function step(client: ModelClient, request: ModelRequest): Promise<StepOutput> {
  return collectStep(
    client.stream(request, new AbortController().signal),
    new Set(),
    (p) => p,
    undefined,
    { provider: client.provider, model: request.model },
  );
}

const user = (text: string): Msg => ({ role: "user", blocks: [{ type: "text", text }] });
const assistant = (out: StepOutput): Msg => ({ role: "assistant", blocks: out.blocks });

/** The recorded Anthropic stream with two consecutive `redacted_thinking` blocks, then text. */
function redactedStream(): { body: string; data: string[] } {
  const [exchange] = cassette("anthropic/test_anthropic_model_thinking_part_redacted_stream.yaml");
  const body = exchange?.response.body?.string ?? "";
  const data = [...body.matchAll(/"type":"redacted_thinking","data":"([^"]+)"/g)].map(
    (m) => m[1] as string,
  );
  return { body, data };
}

/** The recorded Responses exchange: a reasoning item and a call, then the answer after the tool. */
function responsesStreams(): string[] {
  const out: string[][] = [];
  for (const line of chunkLines("openai/openai-reasoning-encrypted-content.1.chunks.txt")) {
    if (line.includes('"type":"response.created"')) out.push([]);
    out.at(-1)?.push(line);
  }
  return out.map((lines) => toSse(lines, { named: true }));
}

describe("a session that switches provider mid-way (issue 19, findings 1-2)", () => {
  it("keeps consecutive redacted_thinking blocks separate through the governed call's stream validation", async () => {
    const recorded = redactedStream();
    expect(recorded.data).toHaveLength(2);
    server.enqueue({ body: recorded.body, split: "awkward" });
    const out = await step(anthropic(), {
      model: SONNET,
      system: [],
      messages: [user("Hi")],
      tools: [],
      maxOutputTokens: 4096,
      reasoning: "low",
    });
    const reasoning = out.blocks.filter((b) => b.type === "reasoning");
    expect(reasoning).toEqual(
      recorded.data.map((data) => ({
        type: "reasoning",
        text: "",
        redacted: data,
        provider: "anthropic",
        model: SONNET,
      })),
    );
    // and they are replayed unchanged, in order, on the next request
    server.enqueue({ body: recorded.body });
    await step(anthropic(), {
      model: SONNET,
      system: [],
      messages: [user("Hi"), assistant(out), user("Again")],
      tools: [],
      maxOutputTokens: 4096,
      reasoning: "low",
    });
    const sent = server.requests[1]?.body as {
      messages: { content: { type: string; data?: string }[] }[];
    };
    const replayed = sent.messages[1]?.content.filter((c) => c.type === "redacted_thinking");
    expect(replayed).toEqual(recorded.data.map((data) => ({ type: "redacted_thinking", data })));
  });

  it("Anthropic with thinking, then OpenAI Responses with reasoning, then back: no foreign reasoning is replayed", async () => {
    const recorded = redactedStream();
    // 1. Anthropic, thinking on.
    server.enqueue({ body: recorded.body });
    const anthropicTurn = await step(anthropic(), {
      model: SONNET,
      system: [],
      messages: [user("Hi")],
      tools: [],
      maxOutputTokens: 4096,
      reasoning: "low",
    });
    expect(anthropicTurn.stopReason).toBe("end_turn");
    let history: Msg[] = [user("Hi"), assistant(anthropicTurn), user("Now compute with the tool.")];

    // 2. OpenAI Responses, reasoning on: a tool loop of four recorded rounds (three calls, an answer).
    const rounds = responsesStreams();
    expect(rounds).toHaveLength(4);
    server.enqueue(...rounds.map((body) => ({ body })));
    const base = {
      model: CODEX,
      system: [],
      tools: [calculator],
      maxOutputTokens: 4096,
      reasoning: "low" as const,
    };
    const callRound = await step(responses(), { ...base, messages: history });
    const toOpenAI = server.requests[1]?.body as { input: { type?: string; role?: string }[] };
    // Anthropic's redacted thinking never reaches OpenAI: only messages go out.
    expect(toOpenAI.input.map((i) => i.type ?? `message:${i.role}`)).toEqual([
      "message:user",
      "message:assistant",
      "message:user",
    ]);
    expect(JSON.stringify(toOpenAI)).not.toContain(recorded.data[0]);
    const own = callRound.blocks.find((b) => b.type === "reasoning");
    expect(own).toMatchObject({
      provider: "openai",
      model: CODEX,
      signature: expect.stringMatching(/^rs_/),
      redacted: expect.any(String),
    });
    let round = callRound;
    for (let i = 0; round.stopReason === "tool_use" && i < 3; i += 1) {
      const call = round.toolCalls[0];
      history = [
        ...history,
        assistant(round),
        {
          role: "user",
          blocks: [
            {
              type: "tool_result",
              callId: call?.id ?? "",
              name: call?.name ?? "",
              output: 19,
              isError: false,
            },
          ],
        },
      ];
      round = await step(responses(), { ...base, messages: history });
      const body = server.requests.at(-1)?.body as {
        input: { type?: string; id?: string; encrypted_content?: string }[];
      };
      // Its own reasoning item is replayed (id and encrypted content); the foreign blocks are not.
      expect(body.input.filter((item) => item.type === "reasoning")).toEqual([
        expect.objectContaining({
          id: (own as { signature: string }).signature,
          encrypted_content: (own as { redacted: string }).redacted,
        }),
      ]);
      expect(JSON.stringify(body)).not.toContain(recorded.data[1]);
    }
    expect(round.stopReason).toBe("end_turn");
    history = [...history, assistant(round), user("Thanks, and back to you.")];
    const sentSoFar = server.requests.length;

    // 3. Back to Anthropic, same model: its own blocks go back, OpenAI's reasoning does not.
    server.enqueue({ body: recorded.body });
    const back = await step(anthropic(), {
      model: SONNET,
      system: [],
      messages: history,
      tools: [calculator],
      maxOutputTokens: 4096,
      reasoning: "low",
    });
    expect(back.stopReason).toBe("end_turn");
    const toAnthropic = server.requests[sentSoFar]?.body as {
      messages: { role: string; content: { type: string; data?: string }[] }[];
    };
    const thinking = toAnthropic.messages.flatMap((m, i) =>
      m.content.filter((c) => c.type.includes("thinking")).map((c) => ({ at: i, ...c })),
    );
    expect(thinking).toEqual(
      recorded.data.map((data) => ({ at: 1, type: "redacted_thinking", data })),
    );
    expect(JSON.stringify(toAnthropic)).not.toContain((own as { redacted: string }).redacted);
    expect(JSON.stringify(toAnthropic)).not.toContain((own as { signature: string }).signature);

    // 4. Another Anthropic model: no thinking block of the first model is sent.
    server.enqueue({ body: recorded.body });
    await step(anthropic(), {
      model: "claude-opus-4-1",
      system: [],
      messages: [...history, assistant(back), user("Once more.")],
      tools: [calculator],
      maxOutputTokens: 4096,
      reasoning: "low",
    });
    const toOpus = server.requests[sentSoFar + 1]?.body as {
      messages: { content: { type: string }[] }[];
    };
    expect(
      toOpus.messages.flatMap((m) => m.content).filter((c) => c.type.includes("thinking")),
    ).toEqual([]);
  });
});
