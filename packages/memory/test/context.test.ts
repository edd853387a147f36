import { type Msg, ValidationError } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import {
  estimateMessagesTokens,
  estimateMessageTokens,
  estimateTokens,
  MEDIA_TOKENS,
  TRIMMED_MARKER_PREFIX,
  trimContext,
  trimmedMarkerMessage,
} from "../src/context/index.js";

const user = (text: string): Msg => ({ role: "user", blocks: [{ type: "text", text }] });
const assistant = (text: string): Msg => ({ role: "assistant", blocks: [{ type: "text", text }] });
const call = (id: string): Msg => ({
  role: "assistant",
  blocks: [{ type: "tool_call", id, name: "lookup", input: { q: "x" } }],
});
const result = (id: string): Msg => ({
  role: "user",
  blocks: [{ type: "tool_result", callId: id, name: "lookup", output: "found", isError: false }],
});
/** A history of `n` exchanges, each a 400-byte question and answer (about 100 tokens each). */
const exchanges = (n: number): Msg[] =>
  Array.from({ length: n }, (_, i) => [
    user(`${i}`.padEnd(400, "q")),
    assistant(`${i}`.padEnd(400, "a")),
  ]).flat();
const markerText = (m: Msg | undefined) => (m?.blocks[0]?.type === "text" ? m.blocks[0].text : "");

describe("token estimates", () => {
  it("a text is its UTF-8 bytes over four, rounded up; a message adds its overhead and each block", () => {
    expect(estimateTokens("")).toBe(0);
    expect(estimateTokens("abcd")).toBe(1);
    expect(estimateTokens("abcde")).toBe(2);
    expect(estimateTokens("é")).toBe(1);
    expect(estimateTokens("😀😀")).toBe(2);
    expect(estimateMessageTokens(user("abcd"))).toBe(4 + 1);
    // overhead 4 + tool 10 + id "c1" 1 + name "lookup" 2 + {"q":"x"} 3
    expect(estimateMessageTokens(call("c1"))).toBe(4 + 10 + 1 + 2 + 3);
    expect(
      estimateMessageTokens({
        role: "user",
        blocks: [{ type: "media", kind: "image", ref: "r", contentType: "image/png" }],
      }),
    ).toBe(4 + MEDIA_TOKENS);
    expect(estimateMessagesTokens([user("abcd"), assistant("abcd")])).toBe(10);
  });
});

describe("trimmedMarkerMessage", () => {
  it("is one harness notice naming the count and the tokens, under the marker prefix", () => {
    const m = trimmedMarkerMessage(3, 42);
    expect(m.role).toBe("user");
    expect(m.blocks).toEqual([expect.objectContaining({ type: "text", origin: "harness" })]);
    expect(markerText(m).startsWith(TRIMMED_MARKER_PREFIX)).toBe(true);
    expect(TRIMMED_MARKER_PREFIX).toBe("[context-trimmed]");
    expect(markerText(m)).toContain("3 message(s)");
    expect(markerText(m)).toContain("~42 tokens");
    expect(() => trimmedMarkerMessage(-1, 0)).toThrow(ValidationError);
  });
});

describe("trimContext", () => {
  it("is disabled when the window is 0, and returns the history untouched under the budget", () => {
    const history = exchanges(50);
    expect(trimContext(history, 0, 0, 0.8, 4)).toEqual({
      messages: history,
      outcome: { removedMessages: 0, removedTokens: 0, trimmed: false },
    });
    expect(trimContext(history, 0, 1_000_000, 0.8, 4).outcome.trimmed).toBe(false);
  });

  it("at the budget nothing is trimmed; one token over, it is", () => {
    const history = exchanges(4);
    const size = estimateMessagesTokens(history);
    expect(trimContext(history, 10, size + 10, 1, 2).outcome.trimmed).toBe(false);
    const over = trimContext(history, 11, size + 10, 1, 2);
    expect(over.outcome.trimmed).toBe(true);
    expect(over.messages.slice(1)).toEqual(history.slice(-2));
  });

  it("keeps the keepRecent most recent messages behind one marker that counts what went", () => {
    const history = exchanges(20);
    const { messages, outcome } = trimContext(history, 0, 2_000, 0.9, 6);
    expect(messages.slice(1)).toEqual(history.slice(-6));
    expect(outcome).toEqual({
      removedMessages: 34,
      removedTokens: estimateMessagesTokens(history.slice(0, 34)),
      trimmed: true,
    });
    expect(markerText(messages[0])).toContain(`${outcome.removedMessages} message(s)`);
    expect(markerText(messages[0])).toContain(`~${outcome.removedTokens} tokens`);
  });

  it("cuts further when the keepRecent suffix still does not fit, and keeps the last exchange when nothing fits", () => {
    const history = exchanges(20);
    const tight = trimContext(history, 0, 450, 1, 10);
    expect(tight.messages.slice(1)).toEqual(history.slice(-4));
    const none = trimContext(history, 10_000, 450, 1, 10);
    expect(none.messages.slice(1)).toEqual(history.slice(-2));
  });

  it("never splits a tool call from its result, nor starts the kept history with a result", () => {
    const history = [
      ...exchanges(5),
      user("look it up"),
      call("c1"),
      result("c1"),
      call("c2"),
      result("c2"),
      assistant("done"),
    ];
    for (const keep of [1, 2, 3, 4, 5, 6]) {
      const kept = trimContext(history, 0, 300, 1, keep).messages.slice(1);
      const first = kept[0] as Msg;
      expect(first.role, `keepRecent ${keep}`).toBe("user");
      expect(
        first.blocks.some((b) => b.type === "tool_result"),
        `keepRecent ${keep}`,
      ).toBe(false);
      const calls = kept.flatMap((m) =>
        m.blocks.flatMap((b) => (b.type === "tool_call" ? [b.id] : [])),
      );
      const results = kept.flatMap((m) =>
        m.blocks.flatMap((b) => (b.type === "tool_result" ? [b.callId] : [])),
      );
      expect(results).toEqual(calls);
    }
  });

  it("with no safe cut returns the history whole; it is pure: a frozen input is never changed", () => {
    const onlyTools = Object.freeze([
      user("start"),
      call("c1"),
      result("c1"),
      call("c2"),
      result("c2"),
    ]);
    expect(trimContext(onlyTools, 0, 10, 1, 1)).toEqual({
      messages: onlyTools,
      outcome: { removedMessages: 0, removedTokens: 0, trimmed: false },
    });
    const history = Object.freeze(exchanges(10));
    const copy = structuredClone(history);
    const a = trimContext(history, 0, 500, 0.8, 2);
    expect(trimContext(history, 0, 500, 0.8, 2)).toEqual(a);
    expect(history).toEqual(copy);
  });

  it("refuses bad arguments with a typed error", () => {
    const h = exchanges(2);
    expect(() => trimContext("x" as unknown as Msg[], 0, 10, 0.5, 1)).toThrow(ValidationError);
    for (const [s, w, t, k] of [
      [-1, 10, 0.5, 1],
      [0, 1.5, 0.5, 1],
      [0, 10, 0, 1],
      [0, 10, 1.01, 1],
      [0, 10, Number.NaN, 1],
      [0, 10, 0.5, -1],
    ] as const) {
      expect(() => trimContext(h, s, w, t, k)).toThrow(ValidationError);
    }
    expect(trimContext(h, 0, 10, 1, 0).outcome.trimmed).toBe(true);
  });
});
