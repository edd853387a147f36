import type { ModelStreamEvent } from "@alma-harness/core";
import { scriptedEvents, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, log } from "./harness.js";

/** Issue 19, finding 3: a refusal is not an answer. */
const usage = { inputTokens: 10, outputTokens: 5 };
const refused = (text: string, refusal?: "cyber" | "bio"): ModelStreamEvent[] => [
  { type: "text_delta", text },
  { type: "usage", evidence: { status: "known", usage } },
  {
    type: "response_completed",
    stopReason: "refusal",
    text,
    toolCalls: [],
    usage,
    ...(refusal ? { refusal } : {}),
  },
];

describe("a refused step", () => {
  it("is withheld like a cut step: no reply, nothing persisted, the category in the result and on the routing trail", async () => {
    const h = harness({ script: [scriptedEvents(refused("Sure, here is how", "cyber"))] });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(result).toMatchObject({
      reply: [],
      stopReason: "refusal",
      terminalReason: "refused",
      refusal: { category: "cyber" },
    });
    // billed all the same: the receipt is kept
    expect(result.receipts).toHaveLength(1);
    expect(result.receipts[0]?.usage).toMatchObject(usage);
    expect(log(outcome).map((m) => m.role)).toEqual(["user"]);
    expect(JSON.stringify(log(outcome))).not.toContain("Sure, here is how");
    expect(h.eventsOf("step.text")).toEqual([]);
    const served = h.trail("routing").filter((e) => e.servedTier !== undefined);
    expect(served).toHaveLength(1);
    expect(served[0]).toMatchObject({ refusal: "cyber" });
    expect(h.trail("lifecycle").at(-1)).toMatchObject({
      action: "turn.completed",
      detail: "refused",
    });
  });

  it("a refusal without a named category is `unspecified`; the next turn does not replay the refused text", async () => {
    const h = harness({
      script: [scriptedEvents(refused("I can't")), scriptedText("Hello again.")],
    });
    const outcome = await h.run();
    expect(completed(outcome).refusal).toEqual({ category: "unspecified" });
    const history = log(outcome);
    const second = completed(
      await h.run({
        history,
        revision: history.length,
        input: [{ type: "text", text: "Something else" }],
      }),
    );
    expect(second.terminalReason).toBe("answered");
    expect(JSON.stringify(h.model.requests[1]?.messages)).not.toContain("I can't");
  });

  it("a refusal after tool calls were released withholds the calls too: no tool runs", async () => {
    const call = scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } });
    const events = call.events.map((e) =>
      e.type === "response_completed"
        ? { ...e, stopReason: "refusal", refusal: "bio" as const }
        : e,
    );
    const h = harness({ tools: [echoTool], script: [scriptedEvents(events)] });
    const outcome = await h.run();
    expect(completed(outcome)).toMatchObject({
      terminalReason: "refused",
      refusal: { category: "bio" },
      toolCalls: [],
    });
    expect(log(outcome).map((m) => m.role)).toEqual(["user"]);
    expect(h.trail("access")).toEqual([]);
  });
});
