import type {
  ModelClient,
  ModelStreamEvent,
  UsageInbox,
  UsageObservation,
  UsageRecordResult,
} from "@alma-harness/core";
import { InMemoryUsageInbox } from "@alma-harness/core/testing";
import { describe, expect, it } from "vitest";
import { SCOPE, setup } from "./harness.js";

const LATE = { inputTokens: 40, outputTokens: 7 };

/** A main client whose stream keeps going after the turn is cancelled: it finishes when told, with its usage. */
function lateClient() {
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let started!: () => void;
  const streaming = new Promise<void>((resolve) => {
    started = resolve;
  });
  const client: ModelClient = {
    id: "fake",
    provider: "fake",
    validate: () => undefined,
    stream: () =>
      (async function* (): AsyncGenerator<ModelStreamEvent> {
        yield { type: "text_delta", text: "Let me check" };
        started();
        await gate;
        yield { type: "usage", evidence: { status: "known", usage: LATE } };
        yield {
          type: "response_completed",
          stopReason: "end_turn",
          text: "Let me check",
          toolCalls: [],
          usage: LATE,
        };
      })(),
  };
  return { client, finish, streaming };
}

/** The inbox, telling the test when a record lands (the test awaits the event, never a timer). */
function recordingInbox(): UsageInbox & { readonly recorded: Promise<UsageRecordResult> } {
  const inner = new InMemoryUsageInbox();
  let landed!: (r: UsageRecordResult) => void;
  const recorded = new Promise<UsageRecordResult>((resolve) => {
    landed = resolve;
  });
  return {
    recorded,
    record: async (o: UsageObservation) => {
      const r = await inner.record(o);
      landed(r);
      return r;
    },
    list: (scope, query) => inner.list(scope, query),
  };
}

describe("late usage through the runner (stores.usageInbox)", () => {
  it("a cancelled turn's stream that finishes afterwards lands in the inbox; the turn, its receipts and spend stay as the cut left them", async () => {
    const late = lateClient();
    const inbox = recordingInbox();
    const small = setup().small;
    const t = setup({
      wrap: (s) => ({ ...s, usageInbox: inbox }),
      config: { clients: [late.client, small] },
    });
    const cancel = new AbortController();
    const pending = t.runner.runTurn({ ...t.request("k1"), signal: cancel.signal });
    await late.streaming;
    cancel.abort();
    const view = await pending;
    if (view.status !== "reconciliation_required")
      throw new Error(`the cancelled turn is uncertain, not ${view.status}`);
    const spend = await t.stores.spend.peek(SCOPE, "s1", "2026-01-01");

    late.finish();
    const { status, observation } = await inbox.recorded;
    expect(status).toBe("recorded");
    expect(observation).toMatchObject({
      scope: SCOPE,
      sessionId: "s1",
      kind: "main",
      clientId: "fake",
      model: "fake-main",
      attribution: "known",
      usage: LATE,
      source: "stream_after_cancel",
    });
    expect((await inbox.list(SCOPE)).items).toHaveLength(1);
    // Nowhere else: no receipt, the same spend, the journal's evidence still unknown, the turn still uncertain.
    expect((await t.stores.settlements.list(SCOPE)).items).toEqual([]);
    expect(await t.stores.spend.peek(SCOPE, "s1", "2026-01-01")).toEqual(spend);
    expect((await t.stores.journal.get(SCOPE, observation.operationId))?.evidence).toEqual({
      status: "unknown",
    });
    expect((await t.runner.read(SCOPE, view.rootKey))?.status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["cancelled"]);
  });
});
