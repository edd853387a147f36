import {
  addUsage,
  type Block,
  replyBlocks,
  textOf,
  totalTokens,
  usageProblem,
  ZERO_USAGE,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";

describe("usageProblem", () => {
  it("accepts safe non-negative integer counters", () => {
    expect(usageProblem({ inputTokens: 0, outputTokens: 0 })).toBeUndefined();
    expect(
      usageProblem({
        inputTokens: 10,
        outputTokens: 5,
        cacheReadTokens: 0,
        reasoningTokens: 5,
        webSearchRequests: 2,
      }),
    ).toBeUndefined();
  });

  it("names the counter that is wrong", () => {
    expect(usageProblem({ inputTokens: -1, outputTokens: 0 })).toMatch(/inputTokens/);
    expect(usageProblem({ inputTokens: 1, outputTokens: 1.5 })).toMatch(/outputTokens/);
    expect(
      usageProblem({ inputTokens: 1, outputTokens: 1, cacheWrite1hTokens: Number.NaN }),
    ).toMatch(/cacheWrite1hTokens/);
    expect(usageProblem({ inputTokens: 2 ** 53, outputTokens: 1 })).toMatch(/inputTokens/);
    expect(usageProblem({ outputTokens: 1 } as never)).toMatch(/inputTokens is required/);
  });

  it("refuses more reasoning tokens than output tokens (reasoning is billed inside output)", () => {
    expect(usageProblem({ inputTokens: 1, outputTokens: 3, reasoningTokens: 4 })).toMatch(
      /reasoningTokens/,
    );
  });
});

describe("addUsage and totalTokens", () => {
  it("adds counters and keeps a counter absent only when both sides lack it", () => {
    const sum = addUsage(
      { inputTokens: 1, outputTokens: 2, cacheReadTokens: 0 },
      { inputTokens: 3, outputTokens: 4, webSearchRequests: 1 },
    );
    expect(sum).toEqual({
      inputTokens: 4,
      outputTokens: 6,
      cacheReadTokens: 0,
      webSearchRequests: 1,
    });
    expect(Object.hasOwn(sum, "cacheWrite5mTokens")).toBe(false);
  });

  it("counts prompt and output tokens, not reasoning twice", () => {
    expect(
      totalTokens({
        inputTokens: 1,
        outputTokens: 2,
        cacheReadTokens: 3,
        cacheWrite5mTokens: 4,
        cacheWrite1hTokens: 5,
        reasoningTokens: 2,
      }),
    ).toBe(15);
    expect(totalTokens(ZERO_USAGE)).toBe(0);
    expect(Object.isFrozen(ZERO_USAGE)).toBe(true);
  });
});

describe("messages", () => {
  const blocks: Block[] = [
    { type: "reasoning", text: "private chain of thought" },
    { type: "text", text: "Hello " },
    { type: "tool_call", id: "c1", name: "lookup", input: {} },
    { type: "text", text: "Ana", origin: "harness" },
  ];

  it("never puts reasoning in a reply", () => {
    expect(replyBlocks(blocks).map((b) => b.type)).toEqual(["text", "tool_call", "text"]);
  });

  it("joins the text blocks in order", () => {
    expect(textOf(blocks)).toBe("Hello Ana");
  });
});
