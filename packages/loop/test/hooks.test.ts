import type { LifecycleHooks, StepPrePatch } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, uncertain } from "./harness.js";

const SCHEMA_SENTINEL = "patient_diagnosis_code";

/** Runs one text turn with a step:pre hook returning `patch`, and returns the request that went out and the trail. */
async function withPatch(patch: Record<string, unknown>) {
  const h = harness({
    tools: [echoTool],
    choice: { cache: { ttl: "5m" }, reasoning: "low" },
    hooks: { "step:pre": () => patch as StepPrePatch },
    script: [scriptedText("ok")],
  });
  const outcome = await h.run();
  completed(outcome);
  return {
    request: h.model.requests[0]!,
    context: h.trail("context"),
    audit: JSON.stringify(h.audit.events),
  };
}

describe("step:pre only narrows", () => {
  const widenings: [string, unknown][] = [
    ["model", "fake-huge"],
    ["clientId", "small"],
    ["tools", [{ name: "rm_rf", description: "x", inputSchema: { type: "object" } }]],
    [
      "output",
      {
        name: "extract",
        schema: { type: "object", properties: { [SCHEMA_SENTINEL]: { type: "string" } } },
      },
    ],
    ["toolChoice", { type: "tool", name: "echo" }],
    ["temperature", 1.5],
    ["cache", { ttl: "1h" }],
    ["reasoning", "high"],
  ];

  for (const [field, value] of widenings) {
    it(`an attempt to change ${field} is refused, recorded by name, and the request goes out pinned`, async () => {
      const { request, context, audit } = await withPatch({ [field]: value });
      expect(context.map((e) => [e.field, e.decision, e.step])).toEqual([[field, "refused", 1]]);
      expect(request.model).toBe("fake-main");
      expect(request.tools.map((t) => t.name)).toEqual(["echo"]);
      expect(request.output).toBeUndefined();
      expect(request.toolChoice).toBeUndefined();
      expect(request.temperature).toBeUndefined();
      expect(request.cache).toEqual({ ttl: "5m" });
      expect(request.reasoning).toBe("low");
      expect(audit).not.toContain(SCHEMA_SENTINEL);
      expect(audit).not.toContain("rm_rf");
    });
  }

  it("removing the tool choice (null) is refused too", async () => {
    const { context } = await withPatch({ toolChoice: null });
    expect(context.map((e) => [e.field, e.decision])).toEqual([["toolChoice", "refused"]]);
  });

  it("a lower output ceiling is honored", async () => {
    const { request, context } = await withPatch({ maxOutputTokens: 100 });
    expect(request.maxOutputTokens).toBe(100);
    expect(context.map((e) => [e.field, e.decision])).toEqual([["maxOutputTokens", "honored"]]);
  });

  it("an equal or higher output ceiling is refused", async () => {
    for (const value of [1024, 1025, 0, 99.5, "100"]) {
      const { request, context } = await withPatch({ maxOutputTokens: value });
      expect(request.maxOutputTokens).toBe(1024);
      expect(context.map((e) => e.decision)).toEqual(["refused"]);
    }
  });

  it("a key outside the vocabulary is recorded as unknown_field, never by its own name", async () => {
    const { context, audit } = await withPatch({ [SCHEMA_SENTINEL]: 1, maxOutputTokens: 10 });
    expect(context.map((e) => [e.field, e.decision])).toEqual([
      ["unknown_field", "refused"],
      ["maxOutputTokens", "honored"],
    ]);
    expect(audit).not.toContain(SCHEMA_SENTINEL);
  });

  it("sees a frozen snapshot of the choice and the request", async () => {
    const seen: boolean[] = [];
    const h = harness({
      hooks: {
        "step:pre": (input) => {
          seen.push(
            Object.isFrozen(input),
            Object.isFrozen(input.choice),
            Object.isFrozen(input.request.messages),
            Object.isFrozen(input.request.messages[0]?.blocks[0]),
          );
          return undefined;
        },
      },
      script: [scriptedText("ok")],
    });
    completed(await h.run());
    expect(seen).toEqual([true, true, true, true]);
  });
});

describe("a hook that throws makes the turn uncertain", () => {
  const boom = () => {
    throw new Error("hook bug");
  };
  const cases: [keyof LifecycleHooks, number][] = [
    ["turn:start", 0],
    ["step:pre", 0],
    ["step:post", 1],
    ["tool:pre", 1],
    ["tool:post", 1],
    ["turn:end", 2],
  ];
  for (const [name, modelCalls] of cases) {
    it(`${name}: cause hook:${name}`, async () => {
      let ends = 0;
      const end = () => {
        ends += 1;
        if (name === "turn:end") boom();
      };
      const hooks: LifecycleHooks =
        name === "turn:end" ? { "turn:end": end } : { [name]: boom, "turn:end": end };
      const h = harness({
        tools: [echoTool],
        hooks,
        script: [
          scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
          scriptedText("ok"),
        ],
      });
      const outcome = uncertain(await h.run());
      expect(outcome.cause).toBe(`hook:${name}`);
      expect(h.model.calls).toBe(modelCalls);
      expect(ends).toBe(1);
      expect(h.eventsOf("turn.completed")).toHaveLength(1);
    });
  }

  it("turn:start sees the input frozen", async () => {
    let frozen = false;
    const look = (input: {
      readonly input: readonly { readonly blocks: readonly unknown[] }[];
    }) => {
      frozen = Object.isFrozen(input.input[0]?.blocks[0]);
    };
    const h = harness({ hooks: { "turn:start": look }, script: [scriptedText("ok")] });
    completed(await h.run());
    expect(frozen).toBe(true);
  });
});
