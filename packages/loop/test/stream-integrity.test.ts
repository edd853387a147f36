import type { ModelStreamEvent } from "@alma-harness/core";
import {
  scriptedEvents,
  scriptedReasoning,
  scriptedText,
  scriptedToolCall,
  scriptedTorn,
} from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, harness, tool, uncertain, log } from "./harness.js";

const USAGE = { inputTokens: 10, outputTokens: 5 };
const usage = (u: object = USAGE): ModelStreamEvent => ({
  type: "usage",
  evidence: { status: "known", usage: { ...USAGE, ...u } },
});
const call = (id: string, name = "probe", args = "{}"): ModelStreamEvent => ({
  type: "tool_call",
  id,
  name,
  arguments: args,
});
const done = (
  stopReason: string,
  text: string,
  toolCalls: { id: string; name: string; arguments: string }[] = [],
  u: object = USAGE,
): ModelStreamEvent => ({
  type: "response_completed",
  stopReason,
  text,
  toolCalls,
  usage: { ...USAGE, ...u },
});

/** Runs one scripted round with a spy tool; the round must leave no effect. */
async function violation(events: readonly ModelStreamEvent[], rule: string) {
  let ran = 0;
  const h = harness({
    tools: [
      tool("probe", () => {
        ran += 1;
        return "ran";
      }),
    ],
    script: [scriptedEvents(events)],
  });
  const outcome = uncertain(await h.run());
  expect(outcome.cause).toBe(`call:main:invalid:none:${rule}`);
  expect(outcome.failure.kind).toBe("stream_invalid");
  expect(ran).toBe(0);
  expect(log(outcome).map((m) => m.role)).toEqual(["user"]);
  expect(h.eventsOf("step.text")).toEqual([]);
  expect(h.model.closed).toBe(1);
  return h;
}

describe("model-stream integrity: each violation ends the turn with no effect from that round", () => {
  it("text after a tool call", async () => {
    await violation(
      [
        call("c1"),
        { type: "text_delta", text: "late" },
        usage(),
        done("tool_use", "late", [{ id: "c1", name: "probe", arguments: "{}" }]),
      ],
      "text_after_tool_calls",
    );
  });

  it("an empty text delta", async () => {
    await violation(
      [{ type: "text_delta", text: "" }, usage(), done("end_turn", "")],
      "text_delta",
    );
  });

  it("concatenated deltas that differ from the completed text", async () => {
    await violation(
      [
        { type: "text_delta", text: "Hel" },
        { type: "text_delta", text: "lo" },
        usage(),
        done("end_turn", "Hello!"),
      ],
      "text_mismatch",
    );
  });

  it("a terminal call whose id differs from the streamed one", async () => {
    await violation(
      [call("c1"), usage(), done("tool_use", "", [{ id: "c2", name: "probe", arguments: "{}" }])],
      "calls_mismatch",
    );
  });

  it("a terminal call whose name differs from the streamed one", async () => {
    await violation(
      [call("c1"), usage(), done("tool_use", "", [{ id: "c1", name: "other", arguments: "{}" }])],
      "calls_mismatch",
    );
  });

  it("a terminal call whose arguments differ by JSON value", async () => {
    await violation(
      [
        call("c1", "probe", '{"a":1}'),
        usage(),
        done("tool_use", "", [{ id: "c1", name: "probe", arguments: '{"a":2}' }]),
      ],
      "calls_mismatch",
    );
  });

  it("a terminal frame with more calls than streamed", async () => {
    await violation(
      [usage(), done("tool_use", "", [{ id: "c1", name: "probe", arguments: "{}" }])],
      "calls_mismatch",
    );
  });

  it("stop reason tool_use without a tool call", async () => {
    await violation(
      [{ type: "text_delta", text: "hi" }, usage(), done("tool_use", "hi")],
      "stop_reason",
    );
  });

  it("tool calls with stop reason end_turn", async () => {
    await violation(
      [call("c1"), usage(), done("end_turn", "", [{ id: "c1", name: "probe", arguments: "{}" }])],
      "stop_reason",
    );
  });

  it("a negative usage counter", async () => {
    await violation(
      [{ type: "text_delta", text: "hi" }, usage({ outputTokens: -1 }), done("end_turn", "hi")],
      "usage",
    );
  });

  it("a fractional usage counter in the terminal frame", async () => {
    await violation(
      [{ type: "text_delta", text: "hi" }, done("end_turn", "hi", [], { inputTokens: 1.5 })],
      "usage",
    );
  });

  it("reasoning tokens above output tokens", async () => {
    await violation(
      [
        { type: "text_delta", text: "hi" },
        usage({ reasoningTokens: 9 }),
        done("end_turn", "hi", [], { reasoningTokens: 9 }),
      ],
      "usage",
    );
  });

  it("a usage event that disagrees with the terminal frame", async () => {
    await violation(
      [{ type: "text_delta", text: "hi" }, usage({ outputTokens: 6 }), done("end_turn", "hi")],
      "usage",
    );
  });

  it("a call id repeated inside one step", async () => {
    await violation(
      [call("c1"), call("c1"), usage(), done("tool_use", "", [])],
      "duplicate_call_id",
    );
  });

  it("an event with an accessor", async () => {
    const sneaky = { type: "text_delta" } as Record<string, unknown>;
    Object.defineProperty(sneaky, "text", { enumerable: true, get: () => "hi" });
    await violation(
      [sneaky as unknown as ModelStreamEvent, usage(), done("end_turn", "hi")],
      "plain_data",
    );
  });

  it("an event that is a class instance, not plain data", async () => {
    class Delta {
      readonly type = "text_delta";
      readonly text = "hi";
    }
    await violation(
      [new Delta() as unknown as ModelStreamEvent, usage(), done("end_turn", "hi")],
      "plain_data",
    );
  });

  it("an unknown event type", async () => {
    await violation(
      [
        { type: "token_delta", text: "x" } as unknown as ModelStreamEvent,
        usage(),
        done("end_turn", ""),
      ],
      "unknown_event",
    );
  });

  it("a provider search result with a fractional count", async () => {
    const result = {
      type: "provider_tool_result",
      provider: "fake",
      callId: "s1",
      name: "web_search",
      resultCount: 1.5,
      payload: null,
    } as const;
    await violation([result, usage(), done("end_turn", "")], "provider_tool_result");
  });
});

describe("model-stream integrity: what a valid stream may do", () => {
  it("a reused call id across steps is a violation of the second step only", async () => {
    let ran = 0;
    const probe = tool("probe", () => {
      ran += 1;
      return "ok";
    });
    const h = harness({
      tools: [probe],
      script: [
        scriptedToolCall({ id: "c1", name: "probe" }),
        scriptedToolCall({ id: "c1", name: "probe" }),
      ],
    });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:main:invalid:none:duplicate_call_id");
    expect(ran).toBe(1);
    expect(log(outcome).map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  });

  it("a stream without a terminal frame is torn", async () => {
    const h = harness({ script: [scriptedTorn(scriptedText("partial"))] });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:main:torn:none");
    expect(outcome.failure.kind).toBe("stream_torn");
    expect(log(outcome)).toHaveLength(1);
    const record = await h.journal.get(h.input().scope, "turn-1:main:1");
    expect(record?.state).toBe("received");
    expect(record?.evidence).toEqual({ status: "unknown" });
  });

  it("the first terminal frame ends pulling: a frame after it is never inspected", async () => {
    const junk = {
      type: "response_completed",
      get text() {
        throw new Error("inspected");
      },
    } as unknown as ModelStreamEvent;
    const h = harness({
      script: [
        scriptedEvents([{ type: "text_delta", text: "hi" }, usage(), done("end_turn", "hi"), junk]),
      ],
    });
    const result = completed(await h.run());
    expect(result.reply).toEqual([{ type: "text", text: "hi" }]);
    expect(h.model.closed).toBe(1);
  });

  it("arguments equal as JSON values but written differently agree", async () => {
    const h = harness({
      tools: [tool("probe", (input) => input)],
      script: [
        scriptedEvents([
          call("c1", "probe", '{"a": 1, "b": [2]}'),
          usage(),
          done("tool_use", "", [{ id: "c1", name: "probe", arguments: '{"b":[2],"a":1}' }]),
        ]),
        scriptedText("ok"),
      ],
    });
    const result = completed(await h.run());
    expect(result.toolCalls).toEqual([
      { id: "c1", name: "probe", input: { a: 1, b: [2] }, isError: false },
    ]);
  });

  it("a terminal frame without deltas carries the text, placed after the reasoning", async () => {
    const h = harness({
      script: [
        scriptedEvents([
          { type: "reasoning_delta", text: "hmm" },
          usage(),
          done("end_turn", "answer"),
        ]),
      ],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(log(outcome)[1]?.blocks).toEqual([
      { type: "reasoning", text: "hmm", provider: "fake", model: "fake-main" },
      { type: "text", text: "answer" },
    ]);
    expect(result.reply).toEqual([{ type: "text", text: "answer" }]);
  });

  it("reasoning closes at its replay data: consecutive provider blocks stay separate, stamped with provenance, never narrated", async () => {
    const events: ModelStreamEvent[] = [
      { type: "reasoning_delta", text: "a" },
      { type: "reasoning_delta", text: "b", signature: "s1" },
      { type: "reasoning_delta", text: "", redacted: "r1" },
      { type: "reasoning_delta", text: "", redacted: "r2" },
      { type: "text_delta", text: "Let me check. " },
      { type: "reasoning_delta", text: "c" },
      call("c1", "probe"),
      usage(),
      done("tool_use", "Let me check. ", [{ id: "c1", name: "probe", arguments: "{}" }]),
    ];
    const h = harness({
      tools: [tool("probe", () => "ok")],
      script: [scriptedEvents(events), scriptedReasoning("d", scriptedText("Done."))],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    const origin = { provider: "fake", model: "fake-main" };
    expect(log(outcome)[1]?.blocks).toEqual([
      { type: "reasoning", text: "ab", signature: "s1", ...origin },
      { type: "reasoning", text: "", redacted: "r1", ...origin },
      { type: "reasoning", text: "", redacted: "r2", ...origin },
      { type: "text", text: "Let me check. " },
      { type: "reasoning", text: "c", ...origin },
      { type: "tool_call", id: "c1", name: "probe", input: {} },
    ]);
    expect(result.reply).toEqual([{ type: "text", text: "Done." }]);
    expect(h.eventsOf("step.text").map((e) => e.text)).toEqual(["Let me check. ", "Done."]);
    // replayed to the provider on the next step, the sequence unchanged
    expect(h.model.requests[1]?.messages[1]?.blocks.slice(0, 3)).toEqual([
      { type: "reasoning", text: "ab", signature: "s1", ...origin },
      { type: "reasoning", text: "", redacted: "r1", ...origin },
      { type: "reasoning", text: "", redacted: "r2", ...origin },
    ]);
  });

  it("a stream that ends without usage cannot be settled: uncertain, never a guessed zero", async () => {
    const h = harness({
      script: [
        scriptedEvents([
          { type: "text_delta", text: "hi" },
          { type: "response_completed", stopReason: "end_turn", text: "hi", toolCalls: [] },
        ]),
      ],
    });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:main:unsettled:end_turn");
    expect(outcome.receipts).toEqual([]);
    expect(h.trail("cost")).toEqual([]);
  });
});
