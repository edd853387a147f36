import { InvalidIdError, InvalidScopeError, trailKey, ValidationError } from "@alma-harness/core";
import { createEngine, EngineConfigError, type EngineConfig } from "@alma-harness/loop";
import { FakeModelClient, scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { echoTool, harness, tool, log } from "./harness.js";

describe("bad input is rejected before anything runs", () => {
  const cases: [string, Record<string, unknown>, new (...args: never[]) => Error][] = [
    ["an invalid scope", { scope: { org: "", uid: "x" } }, InvalidScopeError],
    [
      "a scope with an unknown field",
      { scope: { org: "a", uid: "b", role: "admin" } },
      InvalidScopeError,
    ],
    ["an unknown field", { role: "admin" }, ValidationError],
    ["a session id with spaces", { sessionId: "a b" }, InvalidIdError],
    ["an empty input", { input: [] }, ValidationError],
    [
      "an input block of an unknown type",
      { input: [{ type: "html", text: "x" }] },
      ValidationError,
    ],
    [
      "an input with an accessor",
      {
        input: [
          Object.defineProperty({ type: "text" }, "text", { enumerable: true, get: () => "x" }),
        ],
      },
      ValidationError,
    ],
    [
      "an intent with an unknown sensitivity",
      { intent: { tier: "fast", sensitivity: "secret" } },
      ValidationError,
    ],
    ["a grant naming an unregistered tool", { grant: ["echo", "ghost"] }, ValidationError],
    ["facts that are not plain data", { facts: { when: new Date() } }, ValidationError],
    ["a negative revision", { revision: -1 }, ValidationError],
  ];
  for (const [name, override, type] of cases) {
    it(name, async () => {
      const h = harness({ tools: [echoTool], script: [scriptedText("never")] });
      await expect(h.engine.runTurn({ ...h.input(), ...override } as never)).rejects.toBeInstanceOf(
        type,
      );
      expect(h.model.calls).toBe(0);
      expect(h.audit.events).toEqual([]);
      expect(h.events).toEqual([]);
    });
  }

  it("the input is snapshotted: a later change by the caller reaches nothing", async () => {
    const h = harness({ script: [scriptedText("ok")] });
    const block = { type: "text" as const, text: "original" };
    const turn = h.engine.runTurn(h.input({ input: [block] }));
    (block as { text: string }).text = "changed";
    const outcome = await turn;
    expect(log(outcome)[0]?.blocks[0]).toEqual({ type: "text", text: "original" });
    expect(h.model.requests[0]?.messages[0]?.blocks[0]).toEqual({ type: "text", text: "original" });
  });
});

describe("bad configuration is a construction error", () => {
  const h = harness();
  const base = (): EngineConfig => ({
    clients: [new FakeModelClient()],
    policy: {
      resolve: () => ({ clientId: "fake", model: "fake-main", maxOutputTokens: 10, cache: false }),
    },
    limits: { maxCalls: 2 },
    calls: {} as never,
    audit: h.audit,
    clock: h.clock,
    ids: { next: (p) => p },
  });

  it("no clients, a duplicate client id, or a client that is not a ModelClient", () => {
    expect(() => createEngine({ ...base(), clients: [] })).toThrow(EngineConfigError);
    expect(() =>
      createEngine({ ...base(), clients: [new FakeModelClient(), new FakeModelClient()] }),
    ).toThrow(/two clients/);
    expect(() => createEngine({ ...base(), clients: [{ id: "x" } as never] })).toThrow(
      EngineConfigError,
    );
  });

  it("a trail key under 32 bytes, at 31 and at 32; a TrailKey or none (the per-process key) is accepted", () => {
    expect(() => createEngine({ ...base(), trailKey: "x".repeat(31) })).toThrow(EngineConfigError);
    expect(() => createEngine({ ...base(), trailKey: new Uint8Array(31) })).toThrow(
      /at least 32 bytes/,
    );
    expect(() => createEngine({ ...base(), trailKey: 7 as never })).toThrow(EngineConfigError);
    expect(() => createEngine({ ...base(), trailKey: "x".repeat(32) })).not.toThrow();
    expect(() => createEngine({ ...base(), trailKey: trailKey(new Uint8Array(64)) })).not.toThrow();
    expect(() => createEngine(base())).not.toThrow();
  });

  it("a client built for another version of the model seam", () => {
    const other = Object.assign(new FakeModelClient(), { specificationVersion: "alma-model-v0" });
    expect(() => createEngine({ ...base(), clients: [other as never] })).toThrow(/alma-model-v0/);
    expect(() => createEngine({ ...base(), clients: [new FakeModelClient()] })).not.toThrow();
  });

  it("limits out of range", () => {
    for (const limits of [
      { maxCalls: 0 },
      { maxCalls: 1.5 },
      { maxCalls: 2, maxSteps: 0 },
      { maxCalls: 2, maxParallelToolCalls: 65 },
      { maxCalls: 2, finalAnswerNotice: "" },
    ]) {
      expect(() => createEngine({ ...base(), limits: limits as never })).toThrow(EngineConfigError);
    }
  });

  it("a tool registered twice, a reserved name, a provider tool registered twice", () => {
    expect(() => createEngine({ ...base(), tools: [echoTool, echoTool] })).toThrow(
      /"echo" is registered twice/,
    );
    expect(() =>
      createEngine({ ...base(), tools: [{ ...tool("x", () => 1), name: "search_tools" }] }),
    ).toThrow(/reserved/);
    const search = { kind: "web_search", maxSensitivity: "internal" } as const;
    expect(() => createEngine({ ...base(), providerTools: [search, search] })).toThrow(
      /registered twice/,
    );
    expect(() =>
      createEngine({ ...base(), providerTools: [{ kind: "code_exec" } as never] }),
    ).toThrow(EngineConfigError);
  });
});
