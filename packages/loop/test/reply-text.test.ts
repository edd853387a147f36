import type { Block } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { replyText } from "../src/index.js";

describe("replyText", () => {
  it("joins the reply's own text blocks by newlines and leaves every other block out", () => {
    const reply: Block[] = [
      { type: "text", text: "We are open 9 to 5." },
      { type: "tool_call", id: "c1", name: "opening_hours", input: { day: "monday" } },
      { type: "text", text: "(harness notice)", origin: "harness" },
      { type: "text", text: "See you Monday." },
    ];
    expect(replyText({ reply })).toBe("We are open 9 to 5.\nSee you Monday.");
  });

  it("is empty for an unanswered turn", () => {
    expect(replyText({ reply: [] })).toBe("");
  });
});
