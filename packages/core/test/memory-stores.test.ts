import {
  DAY,
  governedWritesContract,
  recallEvent,
  SCOPE_A,
  settlementOf,
  storeContracts,
} from "@alma-harness/testing";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../src/index.js";
import {
  InMemoryCostSettlementStore,
  InMemorySpendStore,
  inMemoryStores,
  MANUAL_CLOCK_START,
  ManualClock,
  RecordingAuditLog,
  SequentialIds,
} from "../src/testing/index.js";

const t = { describe, it, expect };

/** One linked set, as the runtime composes it; the journal is the suites' `execution`. */
const linked = () => {
  const stores = inMemoryStores({ audit: new RecordingAuditLog() });
  return { ...stores, execution: stores.journal };
};
storeContracts("memory", linked, t);
governedWritesContract("memory", linked, t);

describe("memory doubles beyond the contracts", () => {
  it("InMemoryCostSettlementStore moves the spend store it was given", async () => {
    const spend = new InMemorySpendStore();
    const settlements = new InMemoryCostSettlementStore({ spend });
    t.expect(settlements.spend).toBe(spend);
    await settlements.settle(settlementOf("st-1"));
    expect(await spend.peek(SCOPE_A, "s1", DAY)).toEqual({
      sessionMicros: 1_500,
      tenantDayMicros: 1_500,
    });
  });

  it("RecordingAuditLog fails appends on demand, records nothing then, and heals", async () => {
    const audit = new RecordingAuditLog({
      fail: (e) => (e.trail === "recall" ? new Error("disk full") : undefined),
    });
    await expect(audit.append(recallEvent())).rejects.toThrow("disk full");
    audit.failAppends(new Error("down"));
    await expect(audit.append(recallEvent())).rejects.toThrow("down");
    expect(audit.events).toEqual([]);
    audit.failAppends(undefined);
    await audit.append(recallEvent());
    expect(audit.trail("recall")).toHaveLength(1);
    expect(audit.trail("cost")).toHaveLength(0);
    expect(audit.events[0]?.seq).toBe(1);
  });

  it("RecordingAuditLog validates an event before the failure option sees it", async () => {
    const audit = new RecordingAuditLog({ fail: new Error("never reached") });
    await expect(
      audit.append({ ...recallEvent(), trail: "gossip" } as never),
    ).rejects.toBeInstanceOf(ValidationError);
  });
});

describe("ManualClock", () => {
  it("starts at 2026-01-01 by default, or where told", () => {
    expect(new ManualClock().now()).toBe(MANUAL_CLOCK_START);
    expect(new Date(MANUAL_CLOCK_START).toISOString()).toBe("2026-01-01T00:00:00.000Z");
    expect(new ManualClock(5).now()).toBe(5);
    expect(() => new ManualClock(-1)).toThrow(RangeError);
  });

  it("wakes sleepers only when advanced to their due time, in due order then call order", async () => {
    const clock = new ManualClock(0);
    const woke: string[] = [];
    const sleeps = [
      clock.sleep(20).then(() => woke.push("b20")),
      clock.sleep(10).then(() => woke.push("a10")),
      clock.sleep(20).then(() => woke.push("c20")),
    ];
    expect(clock.pending).toBe(3);
    clock.advance(9);
    await Promise.resolve();
    expect(woke).toEqual([]);
    clock.advance(11);
    await Promise.all(sleeps);
    expect(woke).toEqual(["a10", "b20", "c20"]);
    expect([clock.now(), clock.pending]).toEqual([20, 0]);
  });

  it("sleep(0) resolves at once; an abort rejects with the reason and forgets the sleeper", async () => {
    const clock = new ManualClock(0);
    await clock.sleep(0);
    const controller = new AbortController();
    const sleeping = clock.sleep(100, controller.signal);
    controller.abort(new Error("cancelled"));
    await expect(sleeping).rejects.toThrow("cancelled");
    expect(clock.pending).toBe(0);
    await expect(clock.sleep(5, controller.signal)).rejects.toThrow("cancelled");
    await expect(clock.sleep(-1)).rejects.toBeInstanceOf(RangeError);
  });

  it("set moves forward only", () => {
    const clock = new ManualClock(10);
    clock.set(15);
    expect(clock.now()).toBe(15);
    expect(() => clock.set(14)).toThrow(RangeError);
    expect(() => clock.advance(-1)).toThrow(RangeError);
  });
});

describe("SequentialIds", () => {
  it("counts per prefix and refuses malformed prefixes", () => {
    const ids = new SequentialIds();
    expect([ids.next("turn"), ids.next("op"), ids.next("turn")]).toEqual([
      "turn_1",
      "op_1",
      "turn_2",
    ]);
    expect(() => ids.next("")).toThrow(RangeError);
    expect(() => ids.next("a b")).toThrow(RangeError);
  });
});
