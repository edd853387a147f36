import { describe, expect, it } from "vitest";
import { ConversationConflictError, conversationRootKey } from "@alma-harness/conversation";
import { scriptedError, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { ProviderError } from "@alma-harness/core";
import { SCOPE, setup } from "./harness.js";

describe("runTurn", () => {
  it("completes a tool turn, persists it once, and replays it under the same key without dispatching", async () => {
    const t = setup({
      script: [
        scriptedToolCall({ id: "c1", name: "lookup", input: { day: "monday" } }),
        scriptedText("We open 9 to 5."),
      ],
    });
    const view = await t.runner.runTurn(t.request("k1"));
    expect(view.status).toBe("completed");
    if (view.status !== "completed") return;
    expect(view.replayed).toBe(false);
    expect(view.result.reply).toEqual([{ type: "text", text: "We open 9 to 5." }]);
    expect(view.result.toolCalls).toEqual([
      { id: "c1", name: "lookup", input: { day: "monday" }, isError: false },
    ]);
    expect(view.rootKey).toBe(conversationRootKey(SCOPE, "s1", "k1"));
    const session = await t.stores.sessions.load(SCOPE, "s1");
    expect(session.messages).toHaveLength(4);
    const again = await t.runner.runTurn(t.request("k1"));
    expect(again).toEqual({ ...view, replayed: true });
    expect(t.model.calls).toBe(2);
    expect((await t.stores.sessions.load(SCOPE, "s1")).messages).toHaveLength(4);
  });

  it("rejects a retry with different input under the same key as a conflict", async () => {
    const t = setup({ script: [scriptedText("hi")] });
    await t.runner.runTurn(t.request("k1"));
    await expect(t.runner.runTurn(t.request("k1", "something else"))).rejects.toBeInstanceOf(
      ConversationConflictError,
    );
  });

  it("runs N concurrent deliveries of one key with exactly one model dispatch", async () => {
    const t = setup({ script: [scriptedText("once")] });
    const views = await Promise.all(
      Array.from({ length: 8 }, () => t.runner.runTurn(t.request("k1"))),
    );
    expect(t.model.calls).toBe(1);
    const statuses = views.map((v) => v.status).sort();
    expect(statuses.filter((s) => s === "completed")).toHaveLength(
      statuses.filter((s) => s !== "in_progress").length,
    );
    expect(views.some((v) => v.status === "completed" && !v.replayed)).toBe(true);
    const final = await t.runner.read(SCOPE, conversationRootKey(SCOPE, "s1", "k1"));
    expect(final?.status).toBe("completed");
  });

  it("answers busy for a second key on an occupied session and runs nothing", async () => {
    const t = setup({ script: [scriptedText("first"), scriptedText("second")] });
    const first = t.runner.runTurn(t.request("k1"));
    const second = await t.runner.runTurn(t.request("k2"));
    expect(second.status).toBe("busy");
    if (second.status === "busy")
      expect(second.holder).toBe(conversationRootKey(SCOPE, "s1", "k1"));
    expect((await first).status).toBe("completed");
    expect(t.model.calls).toBe(1);
  });

  it("refuses routing before any claim as not_admitted", async () => {
    const t = setup({
      config: {
        policy: {
          resolve: () => {
            throw new Error("no route");
          },
        },
      },
    });
    const view = await t.runner.runTurn(t.request("k1"));
    expect(view).toEqual({ status: "not_admitted", reason: "routing_unavailable" });
    expect(await t.runner.read(SCOPE, conversationRootKey(SCOPE, "s1", "k1"))).toBeNull();
  });

  it("rejects invalid input before any await, admitting nothing", async () => {
    const t = setup();
    const block = Object.defineProperty({ type: "text" }, "text", {
      get: () => "x",
      enumerable: true,
    });
    await expect(
      t.runner.runTurn({ ...t.request("k1"), input: { role: "user", blocks: [block] } as never }),
    ).rejects.toThrow(/accessor/);
    await expect(
      t.runner.runTurn({ ...t.request("k1"), input: "x".repeat(10_001) }),
    ).rejects.toThrow(/10000/);
    expect(await t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
  });

  it("makes a failed provider call uncertain, releases the session, and reports the cause once", async () => {
    const t = setup({
      script: [
        scriptedError(
          new ProviderError("overloaded", { kind: "overloaded", provider: "fake", status: 529 }),
        ),
        scriptedText("later"),
      ],
    });
    const view = await t.runner.runTurn(t.request("k1"));
    expect(view.status).toBe("reconciliation_required");
    expect(t.uncertain).toHaveLength(1);
    expect(t.uncertain[0]).toMatchObject({
      cause: "call:main:overloaded:none",
      persisted: false,
      released: true,
    });
    expect((await t.runner.read(SCOPE, conversationRootKey(SCOPE, "s1", "k1")))?.status).toBe(
      "reconciliation_required",
    );
    const retry = await t.runner.runTurn(t.request("k2"));
    expect(retry.status).toBe("completed");
    const log = await t.stores.sessions.load(SCOPE, "s1");
    expect(log.messages.filter((m) => m.role === "user")).toHaveLength(1);
  });

  it("erases a session: later reads are unavailable and content is never regenerated", async () => {
    const t = setup({ script: [scriptedText("hello")] });
    await t.runner.runTurn(t.request("k1"));
    await t.runner.eraseSession(SCOPE, "s1");
    expect((await t.runner.read(SCOPE, conversationRootKey(SCOPE, "s1", "k1")))?.status).toBe(
      "unavailable",
    );
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("unavailable");
    expect(t.model.calls).toBe(1);
  });
});

describe("streamTurn", () => {
  it("yields settled step text then the result, with the same view as .result", async () => {
    const t = setup({
      script: [
        scriptedToolCall(
          { id: "c1", name: "lookup", input: { day: "mon" } },
          { text: "Let me check." },
        ),
        scriptedText("9 to 5."),
      ],
    });
    const stream = t.runner.streamTurn(t.request("k1"));
    const seen: string[] = [];
    for await (const event of stream)
      seen.push(event.type === "text" ? `text:${event.text}` : event.type);
    expect(seen).toEqual([
      "usage",
      "text:Let me check.",
      "tool",
      "usage",
      "text:9 to 5.",
      "result",
    ]);
    const view = await stream.result;
    expect(view.status).toBe("completed");
  });

  it("detaches a reader that breaks without cancelling the turn", async () => {
    const t = setup({
      script: [
        scriptedToolCall(
          { id: "c1", name: "lookup", input: { day: "mon" } },
          { text: "Checking." },
        ),
        scriptedText("done"),
      ],
    });
    const stream = t.runner.streamTurn(t.request("k1"));
    for await (const _ of stream) break;
    expect((await stream.result).status).toBe("completed");
    expect(t.model.calls).toBe(2);
  });
});

describe("an erased session", () => {
  it("takes no new turn: unavailable, nothing dispatched, the session free", async () => {
    const t = setup({ script: [scriptedText("hello")] });
    await t.runner.runTurn(t.request("k1"));
    await t.runner.eraseSession(SCOPE, "s1");
    const view = await t.runner.runTurn(t.request("k2"));
    expect(view.status).toBe("unavailable");
    expect(t.model.calls).toBe(1);
    expect((await t.runner.read(SCOPE, conversationRootKey(SCOPE, "s1", "k2")))?.status).toBe(
      "unavailable",
    );
    expect(await t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
  });
});
