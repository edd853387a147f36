import type { TurnStreamEvent } from "@alma-harness/loop";
import {
  scriptedReasoning,
  scriptedText,
  scriptedToolCall,
  scriptedTorn,
} from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { deferred, echoTool, harness, type HarnessOptions, tool, until } from "./harness.js";

async function collect(stream: AsyncIterable<TurnStreamEvent>): Promise<TurnStreamEvent[]> {
  const out: TurnStreamEvent[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

const scenarios: [string, () => HarnessOptions][] = [
  [
    "a tool turn",
    () => ({
      tools: [echoTool],
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }, { text: "Checking. " }),
        scriptedText("Done."),
      ],
    }),
  ],
  [
    "a call-limit turn",
    () => ({
      tools: [echoTool],
      limits: { maxCalls: 1 },
      script: [scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } })],
    }),
  ],
  [
    "a budget stop",
    () => ({
      caps: { perTurnUsd: 0.000105 },
      tools: [echoTool],
      script: [scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } })],
    }),
  ],
  ["a torn stream", () => ({ script: [scriptedTorn(scriptedText("partial"))] })],
];

describe("two faces, one engine", () => {
  for (const [name, options] of scenarios) {
    it(`runTurn and streamTurn give identical outcomes: ${name}`, async () => {
      const a = harness(options());
      const b = harness(options());
      const ran = await a.run();
      const streamed = b.engine.streamTurn(b.input());
      const events = await collect(streamed);
      const result = await streamed.result;
      expect(result).toEqual(ran);
      expect(events.at(-1)).toEqual({ type: "result", outcome: result });
      expect(b.audit.events.map(({ seq: _s, ...e }) => e)).toEqual(
        a.audit.events.map(({ seq: _s, ...e }) => e),
      );
    });
  }

  it("streams settled main-step text, tool and usage metadata; never reasoning or child text", async () => {
    const research = tool(
      "research",
      async (_i, ctx) =>
        (await ctx.models.delegate({ tier: "fast", sensitivity: "internal", prompt: "dig" })).text,
    );
    const h = harness({
      tools: [research],
      script: [
        scriptedReasoning(
          "secret thoughts",
          scriptedToolCall({ id: "c1", name: "research" }, { text: "Looking. " }),
        ),
        scriptedText("Found it."),
      ],
      smallScript: [scriptedText("CHILD TEXT")],
    });
    const events = await collect(h.engine.streamTurn(h.input()));
    expect(events.map((e) => e.type)).toEqual(["usage", "text", "tool", "usage", "text", "result"]);
    expect(
      events.filter((e) => e.type === "text").map((e) => (e as { text: string }).text),
    ).toEqual(["Looking. ", "Found it."]);
    expect(
      events
        .filter((e) => e.type === "usage")
        .every((e) => (e as { receipt: { kind: string } }).receipt.kind === "main"),
    ).toBe(true);
    const text = JSON.stringify(events.filter((e) => e.type !== "result"));
    expect(text).not.toContain("secret thoughts");
    expect(text).not.toContain("CHILD TEXT");
  });

  it("breaking out of the iterator detaches the reader only: the turn runs on to the same result", async () => {
    const gate = deferred<string>();
    const slow = tool("slow", () => gate.promise);
    const h = harness({
      tools: [slow],
      script: [
        scriptedToolCall({ id: "c1", name: "slow" }, { text: "Wait. " }),
        scriptedText("Done."),
      ],
    });
    const streamed = h.engine.streamTurn(h.input());
    for await (const event of streamed) {
      if (event.type === "text") break;
    }
    gate.resolve("ok");
    const outcome = await streamed.result;
    expect(outcome.status).toBe("completed");
    expect(h.model.calls).toBe(2);
  });

  it("a reader that never reads is never waited for", async () => {
    const h = harness({
      tools: [echoTool],
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedText("ok"),
      ],
    });
    const streamed = h.engine.streamTurn(h.input());
    await until(() => h.eventsOf("turn.completed").length === 1, "the turn ended");
    expect((await streamed.result).status).toBe("completed");
  });

  it("invalid input rejects both faces alike, before anything runs", async () => {
    const h = harness({ script: [scriptedText("never")] });
    const bad = { ...h.input(), scope: { org: "../etc", uid: "x" } };
    await expect(h.engine.runTurn(bad)).rejects.toMatchObject({ code: "invalid_scope" });
    const streamed = h.engine.streamTurn(bad);
    await expect(streamed.result).rejects.toMatchObject({ code: "invalid_scope" });
    await expect(collect(streamed)).rejects.toMatchObject({ code: "invalid_scope" });
    expect(h.model.calls).toBe(0);
    expect(h.audit.events).toEqual([]);
  });
});
