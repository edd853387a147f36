import { ValidationError } from "@alma-harness/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { compileSchedule, intervalTrigger } from "../src/index.js";

describe("compileSchedule: cron read in the routine's time zone", () => {
  it("22:00 in São Paulo is 01:00Z the next day; slotsBetween is strictly after, at most max, oldest first", () => {
    const s = compileSchedule({ cron: "0 22 * * *", timeZone: "America/Sao_Paulo" });
    const after = Date.UTC(2026, 0, 1);
    expect(
      s.slotsBetween(after, after + 3 * 86_400_000, 10).map((t) => new Date(t).toISOString()),
    ).toEqual(["2026-01-01T01:00:00.000Z", "2026-01-02T01:00:00.000Z", "2026-01-03T01:00:00.000Z"]);
    expect(
      s.slotsBetween(Date.UTC(2026, 0, 1, 1), Date.UTC(2026, 0, 2, 1), 10),
      "a slot at `after` is not repeated; one at `until` is included",
    ).toEqual([Date.UTC(2026, 0, 2, 1)]);
    expect(s.slotsBetween(after, after + 30 * 86_400_000, 2)).toHaveLength(2);
  });

  it("daylight saving in New York: 09:00 local is 14:00Z before the March change and 13:00Z after", () => {
    const s = compileSchedule({ cron: "0 9 * * *", timeZone: "America/New_York" });
    expect(s.next(Date.UTC(2026, 2, 7))).toBe(Date.UTC(2026, 2, 7, 14));
    expect(s.next(Date.UTC(2026, 2, 9))).toBe(Date.UTC(2026, 2, 9, 13));
  });

  it("refuses with ValidationError what is not cron, never fires, fires more than once a minute, or names no zone", () => {
    for (const cron of ["", "61 * * * *", "hello", "0 0 30 2 *", "*/10 * * * * *"])
      expect(() => compileSchedule({ cron, timeZone: "UTC" }), cron).toThrow(ValidationError);
    expect(() => compileSchedule({ cron: "0 9 * * *", timeZone: "Not/AZone" })).toThrow(
      ValidationError,
    );
    expect(compileSchedule({ cron: "* * * * *", timeZone: "UTC" }).next(0)).toBe(60_000);
  });
});

describe("intervalTrigger: the host clock as a TriggerSource", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("fires every interval, never two at once, and stop waits for the fire in progress and ends the interval", async () => {
    vi.useFakeTimers();
    const trigger = intervalTrigger({ everyMs: 1000, clock: () => 42 });
    let release: () => void = () => undefined;
    const fires: number[] = [];
    trigger.start(async (now) => {
      fires.push(now);
      await new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    await vi.advanceTimersByTimeAsync(3500);
    expect(fires, "the first fire is still running: no second one starts").toEqual([42]);
    release();
    await vi.advanceTimersByTimeAsync(1000);
    expect(fires, "once it settled, the next interval fires").toEqual([42, 42]);
    let stopped = false;
    const stopping = trigger.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped, "stop waits for the fire in progress").toBe(false);
    release();
    await stopping;
    await vi.advanceTimersByTimeAsync(5000);
    expect(fires, "nothing fires after stop").toEqual([42, 42]);
    trigger.start(async () => void fires.push(0));
    await vi.advanceTimersByTimeAsync(5000);
    expect(fires, "a stopped trigger does not start again").toEqual([42, 42]);
  });

  it("refuses an interval under a second", () => {
    expect(() => intervalTrigger({ everyMs: 999 })).toThrow(TypeError);
  });
});
