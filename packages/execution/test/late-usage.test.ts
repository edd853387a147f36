import type { ModelClient, ModelStreamEvent, UsageInbox } from "@alma-harness/core";
import { InMemoryUsageInbox, type ManualClock } from "@alma-harness/core/testing";
import {
  AbortedError,
  GovernedCalls,
  LATE_USAGE_GRACE_MS,
  UncertainCallError,
} from "@alma-harness/execution";
import { describe, expect, it } from "vitest";
import { CHOICE, identity, options, REQUEST, SCOPE, setup } from "./fixtures.js";

const LATE = { inputTokens: 10, outputTokens: 5 };

/**
 * A client whose stream streams some text, then waits for `finish()` whatever its signal says (a
 * provider that keeps going after the cut), then reports its usage and completes.
 */
function lateClient(
  tail: readonly ModelStreamEvent[] = [
    { type: "usage", evidence: { status: "known", usage: LATE } },
    { type: "response_completed", stopReason: "end_turn", text: "hi", toolCalls: [], usage: LATE },
  ],
) {
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let started!: () => void;
  const streaming = new Promise<void>((resolve) => {
    started = resolve;
  });
  const state = { closed: false };
  const c: ModelClient = {
    id: "c",
    provider: "test",
    validate: () => undefined,
    stream: () =>
      (async function* () {
        try {
          yield { type: "text_delta", text: "hi" } as ModelStreamEvent;
          started();
          await gate;
          yield* tail;
        } finally {
          state.closed = true;
        }
      })(),
  };
  return { client: c, finish, streaming, state };
}

function withInbox(
  inbox: UsageInbox = new InMemoryUsageInbox(),
  extra: { lateUsageGraceMs?: number } = {},
) {
  const s = setup({ caps: { perSessionUsd: { usd: 1, onExceeded: "block" } } });
  const calls = new GovernedCalls({ ...s.config, usageInbox: inbox, ...extra });
  return { ...s, calls, account: calls.account(), inbox, clock: s.config.clock as ManualClock };
}

/** Everything a settlement would have moved, to show the late usage moved none of it. */
async function money(s: ReturnType<typeof withInbox>) {
  return {
    receipts: (await s.settlements.list(SCOPE)).items.length,
    spend: await s.spend.peek(SCOPE, "s1", "2026-01-01"),
    account: { spent: s.account.spentMicros, receipts: s.account.receipts.length },
    journal: (await s.journal.get(SCOPE, "t1:main:1"))?.evidence,
    cost: s.audit.trail("cost").length,
  };
}

describe("late usage: a cut call's stream that finishes after the cut", () => {
  it("finishing after the turn's deadline: its usage lands in the inbox and nowhere else", async () => {
    const s = withInbox();
    const late = lateClient();
    const turn = new AbortController();
    const run = s.calls.run(
      identity(),
      late.client,
      CHOICE,
      REQUEST,
      options(s.account, { signal: turn.signal }),
    );
    await late.streaming;
    turn.abort(new AbortedError("deadline"));
    const error = await run.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UncertainCallError);
    expect((error as UncertainCallError).uncertainCause).toBe("deadline");
    const atCut = await money(s);
    expect(atCut.journal).toEqual({ status: "unknown" });
    const held = s.account.reservedMicros;
    expect(held).toBeGreaterThan(0);

    late.finish();
    await s.calls.lateUsageDrained();
    const page = await s.inbox.list(SCOPE);
    expect(page.items).toEqual([
      {
        scope: SCOPE,
        sessionId: "s1",
        rootKey: "r1",
        turnId: "t1",
        operationId: "t1:main:1",
        kind: "main",
        clientId: "c",
        model: "m",
        attribution: "known",
        usage: LATE,
        source: "stream_after_deadline",
        observedAt: s.clock.now(),
      },
    ]);
    // No settlement, no spend, no receipt, the journal still unknown, the reservation still held, no cost trail.
    expect(await money(s)).toEqual(atCut);
    expect(atCut).toMatchObject({
      receipts: 0,
      spend: { sessionMicros: 0, tenantDayMicros: 0 },
      cost: 0,
    });
    expect(s.account.reservedMicros).toBe(held);
    expect(late.state.closed).toBe(true);
  });

  it("finishing after the round timed out: source stream_after_timeout; after a cancellation: stream_after_cancel", async () => {
    const s = withInbox();
    const timed = lateClient();
    const run = s.calls.run(
      identity(1),
      timed.client,
      CHOICE,
      REQUEST,
      options(s.account, { roundTimeoutMs: 1_000 }),
    );
    await timed.streaming;
    s.clock.advance(1_000);
    await expect(run).rejects.toMatchObject({ uncertainCause: "call:main:aborted" });
    timed.finish();
    const cancelled = lateClient();
    const turn = new AbortController();
    const second = s.calls.run(
      identity(2),
      cancelled.client,
      CHOICE,
      REQUEST,
      options(s.account, { signal: turn.signal }),
    );
    await cancelled.streaming;
    turn.abort();
    await expect(second).rejects.toMatchObject({ uncertainCause: "cancelled" });
    cancelled.finish();
    await s.calls.lateUsageDrained();
    expect((await s.inbox.list(SCOPE)).items.map((o) => [o.operationId, o.source])).toEqual([
      ["t1:main:1", "stream_after_timeout"],
      ["t1:main:2", "stream_after_cancel"],
    ]);
  });

  it("a stream still running at the grace period's end is closed and records nothing; one past the cut with unknown usage records nothing", async () => {
    const s = withInbox(new InMemoryUsageInbox(), { lateUsageGraceMs: 5_000 });
    const slow = lateClient();
    const turn = new AbortController();
    const run = s.calls.run(
      identity(1),
      slow.client,
      CHOICE,
      REQUEST,
      options(s.account, { signal: turn.signal }),
    );
    await slow.streaming;
    turn.abort(new AbortedError("deadline"));
    await run.catch(() => undefined);
    s.clock.advance(5_000);
    await s.calls.lateUsageDrained();
    slow.finish();
    const unknown = lateClient([
      { type: "usage", evidence: { status: "unknown" } },
      { type: "response_completed", stopReason: "end_turn", text: "hi", toolCalls: [] },
    ]);
    const other = new AbortController();
    const second = s.calls.run(
      identity(2),
      unknown.client,
      CHOICE,
      REQUEST,
      options(s.account, { signal: other.signal }),
    );
    await unknown.streaming;
    other.abort(new AbortedError("deadline"));
    await second.catch(() => undefined);
    unknown.finish();
    await s.calls.lateUsageDrained();
    expect((await s.inbox.list(SCOPE)).items).toEqual([]);
  });

  it("an inbox that fails is swallowed: the call's outcome is the cut's, no rejection escapes", async () => {
    const failing: UsageInbox = {
      record: () => Promise.reject(new Error("inbox down")),
      list: () => Promise.reject(new Error("inbox down")),
    };
    const s = withInbox(failing);
    const late = lateClient();
    const turn = new AbortController();
    const run = s.calls.run(
      identity(),
      late.client,
      CHOICE,
      REQUEST,
      options(s.account, { signal: turn.signal }),
    );
    await late.streaming;
    turn.abort(new AbortedError("deadline"));
    await expect(run).rejects.toMatchObject({ uncertainCause: "deadline" });
    late.finish();
    await s.calls.lateUsageDrained();
    expect((await s.settlements.list(SCOPE)).items).toEqual([]);
  });

  it("a call that completes settles as ever and records nothing late; without an inbox a cut stream is closed at once", async () => {
    const s = withInbox();
    const normal = lateClient();
    const run = s.calls.run(identity(1), normal.client, CHOICE, REQUEST, options(s.account));
    await normal.streaming;
    normal.finish();
    expect((await run).status).toBe("settled");
    await s.calls.lateUsageDrained();
    expect((await s.inbox.list(SCOPE)).items).toEqual([]);

    const plain = setup();
    const cut = lateClient();
    const turn = new AbortController();
    const second = plain.calls.run(
      identity(1),
      cut.client,
      CHOICE,
      REQUEST,
      options(plain.account, { signal: turn.signal }),
    );
    await cut.streaming;
    turn.abort(new AbortedError("deadline"));
    await second.catch(() => undefined);
    cut.finish();
    await plain.calls.lateUsageDrained();
    // The generator's return ran once its pending pull settled: nothing read it on.
    await new Promise((resolve) => setImmediate(resolve));
    expect(cut.state.closed).toBe(true);
  });

  it("the grace period is a positive integer, default 60 s; the inbox must be one", () => {
    expect(LATE_USAGE_GRACE_MS).toBe(60_000);
    const s = setup();
    expect(
      () =>
        new GovernedCalls({
          ...s.config,
          usageInbox: new InMemoryUsageInbox(),
          lateUsageGraceMs: 0,
        }),
    ).toThrow(TypeError);
    expect(() => new GovernedCalls({ ...s.config, usageInbox: {} as UsageInbox })).toThrow(
      TypeError,
    );
  });
});
