import { defineTool, SEARCH_TOOLS_NAME } from "@alma-harness/core";
import { ConversationConfigError } from "@alma-harness/conversation";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { lookupTool, SCOPE, setup } from "./harness.js";

const refill = defineTool({
  name: "pharmacy__refill",
  description: "Refills a prescription at the pharmacy.",
  input: { type: "object" },
  deferred: true,
  handler: () => ({ refilled: true }),
});

describe("deferred tools through the durable runner", () => {
  it("a load persisted in the session is advertised on the next turn, after search_tools", async () => {
    const t = setup({
      tools: [lookupTool, refill],
      script: [
        scriptedToolCall({
          id: "s1",
          name: SEARCH_TOOLS_NAME,
          input: { query: "refill a prescription" },
        }),
        scriptedText("Loaded."),
        scriptedText("Refilling."),
      ],
    });
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("completed");
    const stored = (await t.stores.sessions.load(SCOPE, "s1")).messages
      .flatMap((m) => m.blocks)
      .find((b) => b.type === "tool_result");
    expect(stored).toMatchObject({ name: SEARCH_TOOLS_NAME, loads: ["pharmacy__refill"] });
    expect((await t.runner.runTurn(t.request("k2", "Please refill it"))).status).toBe("completed");
    expect(t.model.requests.map((r) => r.tools.map((s) => s.name))).toEqual([
      ["lookup", SEARCH_TOOLS_NAME],
      ["lookup", SEARCH_TOOLS_NAME, "pharmacy__refill"],
      ["lookup", SEARCH_TOOLS_NAME, "pharmacy__refill"],
    ]);
  });

  it("search_tools is never in a profile: a profile naming it is a configuration error", () => {
    expect(() =>
      setup({
        tools: [lookupTool, refill],
        config: { profiles: { front: ["lookup", SEARCH_TOOLS_NAME] } },
      }),
    ).toThrow(ConversationConfigError);
  });
});
