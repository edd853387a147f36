import type { Block, Msg, MsgMeta } from "@alma-harness/core";
import { MANUAL_CLOCK_START } from "@alma-harness/core/testing";
import {
  DEFAULT_SUMMARY_FRAME,
  type LongContextPolicy,
  measuredText,
  SUMMARY_INSTRUCTION,
} from "@alma-harness/loop";
import { scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, harness, log, SCOPE, uncertain } from "./harness.js";

const NOW = MANUAL_CLOCK_START;
const text = (t: string): Block => ({ type: "text", text: t });
const msg = (
  role: "user" | "assistant",
  t: string,
  at: number,
  meta: Omit<MsgMeta, "at"> = { turn: "old" },
): Msg => ({ role, blocks: [text(t)], meta: { ...meta, at } });

/** Six messages of an earlier conversation, the newest recorded `age` ms ago; the fifth carries an event id. */
function history(age = 300_001): Msg[] {
  const at = NOW - age;
  return [
    msg("user", "My name is Ana.", at - 50),
    msg("assistant", "Hello Ana.", at - 40),
    msg("user", "I need an appointment on Monday.", at - 30),
    msg("assistant", "Monday at 10 works.", at - 20),
    msg("user", "Book it.", at - 10, { turn: "old", event: { id: "wa-4", kind: "input" } }),
    msg("assistant", "Booked.", at),
  ];
}

const POLICY: LongContextPolicy = { rotateAtTokens: 1, keepLastMessages: 2, summaryTier: "fast" };
const SUMMARY = "Ana booked Monday at 10.";
const marker = (replaces: number, summary = SUMMARY) => ({
  role: "user",
  blocks: [
    {
      type: "text",
      text: `${DEFAULT_SUMMARY_FRAME.before}\n\n${summary}\n\n${DEFAULT_SUMMARY_FRAME.after}`,
      origin: "harness",
    },
  ],
  meta: { rotation: { replaces }, turn: "turn-1", at: NOW },
});
const texts = (messages: readonly Msg[]) =>
  messages.map((m) => m.blocks.map((b) => (b.type === "text" ? b.text : b.type)).join("|"));

function cold(opts: Parameters<typeof harness>[0] & { policy_?: Partial<LongContextPolicy> } = {}) {
  const { policy_, ...rest } = opts;
  return harness({
    longContext: { ...POLICY, ...policy_ },
    smallScript: [scriptedText(SUMMARY)],
    script: [scriptedText("Sure.")],
    ...rest,
  });
}

describe("cold-start rotation (spec: long-context)", () => {
  it("reads a speech tool's call as what the assistant said to the person, whole (seed 000, speechTools)", async () => {
    const at = NOW - 300_001;
    const said = "Your appointment is on Monday at 10; bring your card. ".repeat(20).trim();
    const past: Msg[] = [
      msg("user", "Can I come on Monday?", at - 30),
      {
        role: "assistant",
        blocks: [
          { type: "tool_call", id: "c1", name: "send_whatsapp", input: { text: said, to: "p-1" } },
          { type: "tool_call", id: "c2", name: "lookup", input: { day: "monday" } },
        ],
        meta: { turn: "old", at: at - 20 },
      },
      {
        role: "user",
        blocks: [
          {
            type: "tool_result",
            callId: "c1",
            name: "send_whatsapp",
            output: "sent",
            isError: false,
          },
          { type: "tool_result", callId: "c2", name: "lookup", output: "open", isError: false },
        ],
        meta: { turn: "old", at: at - 10 },
      },
      msg("user", "Thanks.", at - 5),
      msg("assistant", "You're welcome.", at),
    ];
    const h = cold({ policy_: { speechTools: { send_whatsapp: "text" } } });
    completed(await h.run({ history: past }));
    expect(texts(h.small.requests[0]?.messages ?? [])).toEqual([
      [
        "Person: Can I come on Monday?",
        `Assistant (to the person, through send_whatsapp): ${said}`,
        'Assistant called lookup with {"day":"monday"}',
        "Result of send_whatsapp: sent",
        "Result of lookup: open",
      ].join("\n"),
    ]);
  });

  it("refuses a speechTools that is not {toolName: argumentName}, at construction", () => {
    for (const speechTools of [
      [],
      { "bad name": "text" },
      { send: "" },
      { send: 3 },
      Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`t${i}`, "text"])),
    ]) {
      expect(() =>
        cold({ policy_: { speechTools: speechTools as unknown as Record<string, string> } }),
      ).toThrow(/speechTools/);
    }
    // At the limit: 64 tools.
    const sixtyFour = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`t${i}`, "text"]));
    expect(() => cold({ policy_: { speechTools: sixtyFour } })).not.toThrow();
  });

  it("summarizes the older history on the summary tier and continues from [summary, tail, input]", async () => {
    const h = cold();
    const past = history();
    const outcome = await h.run({ history: past });
    const result = completed(outcome);
    expect(h.routes).toContainEqual({ tier: "fast", sensitivity: "internal", task: "summary" });
    const summaryRequest = h.small.requests[0];
    expect(summaryRequest?.system).toEqual([{ type: "text", text: SUMMARY_INSTRUCTION }]);
    expect(summaryRequest?.tools).toEqual([]);
    expect(texts(summaryRequest?.messages ?? [])).toEqual([
      "Person: My name is Ana.\nAssistant: Hello Ana.\nPerson: I need an appointment on Monday.\nAssistant: Monday at 10 works.",
    ]);
    expect(h.model.requests[0]?.messages).toEqual([
      marker(4),
      past[4],
      past[5],
      expect.objectContaining({ role: "user", blocks: [text("Hello")] }),
    ]);
    expect(result.receipts.map((r) => r.kind)).toEqual(["summary", "main"]);
    expect(result.reply).toEqual([text("Sure.")]);
  });

  it("persists the marker, the tail re-recorded without its event id, then the turn's messages", async () => {
    const h = cold();
    const past = history();
    const messages = log(await h.run({ history: past }));
    expect(messages[0]).toEqual(marker(4));
    expect(messages[1]).toEqual({
      role: "user",
      blocks: [text("Book it.")],
      meta: { turn: "old", at: past[4]?.meta?.at },
    });
    expect(messages[2]).toBe(past[5]);
    expect(texts(messages.slice(3))).toEqual(["Hello", "Sure."]);
    expect(messages.slice(3).every((m) => m.meta?.turn === "turn-1" && m.meta.at === NOW)).toBe(
      true,
    );
  });

  it("the summary has its own routing record, receipt, journal record and cost event", async () => {
    const h = cold();
    await h.run({ history: history() });
    const routing = h.trail("routing").filter((e) => e.kind === "summary");
    expect(routing).toHaveLength(2);
    expect(routing[0]).toMatchObject({
      callId: "turn-1:summary:1",
      clientId: "small",
      model: "fake-small",
      tier: "fast",
      sensitivity: "internal",
    });
    expect(routing[1]?.servedTier).toBe("standard");
    expect((await h.journal.get(SCOPE, "turn-1:summary:1"))?.state).toBe("completed");
    expect(h.trail("cost").map((e) => e.operationId)).toEqual([
      "turn-1:summary:1",
      "turn-1:main:2",
    ]);
  });

  it("rotates only strictly over rotateAtTokens, measured by estimateTokens on the content text", async () => {
    const past = history();
    const size = measuredText(past).length;
    const at = cold({ policy_: { rotateAtTokens: size, estimateTokens: (t) => t.length } });
    await at.run({ history: past });
    expect(at.small.calls).toBe(0);
    expect(at.model.requests[0]?.messages).toHaveLength(7);
    const over = cold({ policy_: { rotateAtTokens: size - 1, estimateTokens: (t) => t.length } });
    await over.run({ history: past });
    expect(over.small.calls).toBe(1);
  });

  it("by default measures ceil(characters / 4) of roles, text, tool calls and results, never meta or keys", async () => {
    const past = history();
    expect(measuredText(past)).toBe(
      "user\nMy name is Ana.\nassistant\nHello Ana.\nuser\nI need an appointment on Monday.\nassistant\nMonday at 10 works.\nuser\nBook it.\nassistant\nBooked.",
    );
    const tokens = Math.ceil(measuredText(past).length / 4);
    const at = cold({ policy_: { rotateAtTokens: tokens } });
    await at.run({ history: past });
    expect(at.small.calls).toBe(0);
    const over = cold({ policy_: { rotateAtTokens: tokens - 1 } });
    await over.run({ history: past });
    expect(over.small.calls).toBe(1);
    const calls: Msg[] = [
      {
        role: "assistant",
        blocks: [{ type: "tool_call", id: "c1", name: "lookup", input: { day: "Monday", n: 2 } }],
      },
      {
        role: "user",
        blocks: [
          {
            type: "tool_result",
            callId: "c1",
            name: "lookup",
            output: { open: "09:00" },
            isError: false,
          },
          { type: "media", kind: "image", ref: "https://x/y.png", contentType: "image/png" },
        ],
      },
    ];
    expect(measuredText(calls)).toBe("assistant\nlookup\nMonday\n2\nuser\nlookup\n09:00");
  });

  it("exactly coldAfterMs after the newest message is warm; one millisecond more is cold", async () => {
    const warm = cold({ policy_: { coldAfterMs: 60_000 } });
    await warm.run({ history: history(60_000) });
    expect(warm.small.calls).toBe(0);
    const coldOne = cold({ policy_: { coldAfterMs: 60_000 } });
    await coldOne.run({ history: history(60_001) });
    expect(coldOne.small.calls).toBe(1);
    const byDefault = cold();
    await byDefault.run({ history: history(300_000) });
    expect(byDefault.small.calls).toBe(0);
  });

  it("a history with no timed message is cold", async () => {
    const h = cold();
    await h.run({ history: history().map((m) => ({ role: m.role, blocks: m.blocks })) });
    expect(h.small.calls).toBe(1);
  });

  it("keeps at most keepLastMessages, starting at a user message that holds no tool result", async () => {
    const at = NOW - 400_000;
    const past: Msg[] = [
      msg("user", "u1", at),
      msg("assistant", "a1", at),
      msg("user", "u2", at),
      {
        role: "assistant",
        blocks: [{ type: "tool_call", id: "c1", name: "lookup", input: {} }],
        meta: { at },
      },
      {
        role: "user",
        blocks: [
          { type: "tool_result", callId: "c1", name: "lookup", output: "ok", isError: false },
        ],
        meta: { at },
      },
      msg("assistant", "a3", at),
    ];
    const tailOf = async (keepLastMessages: number) => {
      const h = cold({ policy_: { keepLastMessages } });
      await h.run({ history: past });
      return texts(h.model.requests[0]?.messages.slice(1, -1) ?? []);
    };
    expect(await tailOf(4)).toEqual(["u2", "tool_call", "tool_result", "a3"]);
    expect(await tailOf(5)).toEqual(["u2", "tool_call", "tool_result", "a3"]);
    expect(await tailOf(3)).toEqual([]);
    expect(await tailOf(0)).toEqual([]);
  });

  it("does not rotate without a removable head, with fewer than two calls left, or without a policy", async () => {
    const whole = cold({ policy_: { keepLastMessages: 6 } });
    await whole.run({ history: history() });
    expect(whole.small.calls).toBe(0);
    const oneCall = cold({ limits: { maxCalls: 1 } });
    await oneCall.run({ history: history() });
    expect(oneCall.small.calls).toBe(0);
    expect(oneCall.model.requests[0]?.messages).toHaveLength(7);
    const none = harness({ script: [scriptedText("Sure.")] });
    await none.run({ history: history() });
    expect(none.model.requests[0]?.messages).toHaveLength(7);
  });

  it("the summary frame and the estimate are the host's; a failing estimate is uncertain", async () => {
    const framed = cold({ policy_: { summaryFrame: { before: "Earlier:", after: "" } } });
    await framed.run({ history: history() });
    expect(framed.model.requests[0]?.messages[0]?.blocks).toEqual([
      { type: "text", text: `Earlier:\n\n${SUMMARY}`, origin: "harness" },
    ]);
    const broken = cold({
      policy_: {
        estimateTokens: () => {
          throw new Error("no tokenizer");
        },
      },
    });
    expect(uncertain(await broken.run({ history: history() })).cause).toBe("long_context");
  });

  it("an empty or cut summary is uncertain; a summary the table cannot price is a budget stop", async () => {
    const empty = cold({ smallScript: [scriptedText("")] });
    expect(uncertain(await empty.run({ history: history() })).cause).toBe("call:summary:empty");
    const cut = cold({ smallScript: [scriptedText("Ana bo", { stopReason: "max_tokens" })] });
    expect(uncertain(await cut.run({ history: history() })).cause).toBe(
      "call:summary:unavailable:max_tokens",
    );
    const unpriced = cold({
      policy: (intent) => ({
        clientId: intent.task === "summary" ? "small" : "fake",
        model: intent.task === "summary" ? "no-price" : "fake-main",
        maxOutputTokens: 256,
        cache: false,
      }),
    });
    const outcome = await unpriced.run({ history: history() });
    expect(completed(outcome).budget).toEqual({ metric: "unpriced", answered: false });
    expect(texts(log(outcome))).toEqual(["Hello"]);
  });
});
