import type { VolatileContext } from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, SCOPE, uncertain, log } from "./harness.js";

describe("the volatile suffix", () => {
  it("is called once per turn with scope, session, intent, trigger and the clock's time", async () => {
    const seen: VolatileContext[] = [];
    const h = harness({
      tools: [echoTool],
      volatile: (ctx) => {
        seen.push(ctx);
        return "Today is Monday.";
      },
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedText("ok"),
      ],
    });
    completed(await h.run({ trigger: "whatsapp" }));
    expect(seen).toEqual([
      {
        scope: SCOPE,
        sessionId: "s1",
        intent: { tier: "balanced", sensitivity: "internal" },
        trigger: "whatsapp",
        now: h.clock.now(),
      },
    ]);
    expect(Object.isFrozen(seen[0])).toBe(true);
  });

  it("joins the static volatile blocks as one harness block appended to the input, persisted and replayed byte-identical", async () => {
    const h = harness({
      tools: [echoTool],
      volatileSystem: ["Clinic hours: 9-17."],
      volatile: () => "Today is Monday.",
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedText("ok"),
      ],
    });
    const outcome = await h.run();
    completed(outcome);
    const block = {
      type: "text",
      text: "Clinic hours: 9-17.\n\nToday is Monday.",
      origin: "harness",
    };
    expect(log(outcome)[0]?.blocks).toEqual([{ type: "text", text: "Hello" }, block]);
    expect(h.model.requests[0]?.messages[0]?.blocks[1]).toEqual(block);
    expect(JSON.stringify(h.model.requests[1]?.messages[0])).toBe(
      JSON.stringify(h.model.requests[0]?.messages[0]),
    );
    // the static system prompt stays the cached prefix
    expect(h.model.requests[0]?.system).toEqual([{ type: "text", text: "You are a test agent." }]);
  });

  it("adds nothing when there is no volatile text", async () => {
    const h = harness({ volatile: () => undefined, script: [scriptedText("ok")] });
    const outcome = await h.run();
    expect(log(outcome)[0]?.blocks).toEqual([{ type: "text", text: "Hello" }]);
  });

  it("a source that fails after admission leaves the turn uncertain", async () => {
    const h = harness({
      volatile: () => {
        throw new Error("calendar down");
      },
      script: [scriptedText("never")],
    });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("volatile");
    expect(h.model.calls).toBe(0);
  });

  it("a source that returns something other than text leaves the turn uncertain", async () => {
    const h = harness({ volatile: () => 42 as unknown as string, script: [scriptedText("never")] });
    expect(uncertain(await h.run()).cause).toBe("volatile");
  });
});
