import { ManualClock } from "@alma-harness/core/testing";
import type { ModelRequest, Msg, Usage } from "@alma-harness/core";
import {
  CacheHygieneConfigError,
  cacheHygieneGuard,
  type CacheHygieneCause,
} from "@alma-harness/loop";
import { scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { echoTool, harness, pseudonym, tool } from "./harness.js";

const MIN = 60_000;
/** Most of the prompt written to the cache: a cold write. */
const COLD: Usage = {
  inputTokens: 20,
  outputTokens: 5,
  cacheWrite5mTokens: 3_000,
  cacheReadTokens: 0,
};
const COLD_1H: Usage = {
  inputTokens: 20,
  outputTokens: 5,
  cacheWrite1hTokens: 3_000,
  cacheReadTokens: 0,
};
/** The prefix read through, the new tail written. */
const WARM: Usage = {
  inputTokens: 20,
  outputTokens: 5,
  cacheWrite5mTokens: 200,
  cacheReadTokens: 3_000,
};
/** Nothing cached at all. */
const UNCACHED: Usage = {
  inputTokens: 300,
  outputTokens: 5,
  cacheWrite5mTokens: 0,
  cacheReadTokens: 0,
};

const CACHED_5M = { choice: { cache: { ttl: "5m" as const } } };
const CACHED_1H = { choice: { cache: { ttl: "1h" as const } } };

function request(over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model: "m",
    system: [{ type: "text", text: "sys" }],
    messages: [{ role: "user", blocks: [{ type: "text", text: "hi" }] }],
    tools: [],
    maxOutputTokens: 100,
    cache: { ttl: "5m" },
    ...over,
  };
}

/** Runs `n` one-step turns of session s1, `gapMs` apart, the model reporting `usage[i]`. */
async function session(
  h: ReturnType<typeof harness>,
  usages: readonly Usage[],
  gapMs: number,
  perTurn: (i: number) => Parameters<typeof h.run>[0] = () => ({}),
) {
  let history: Msg[] = [];
  for (let i = 0; i < usages.length; i++) {
    h.model.push(scriptedText(`answer ${i}`, { usage: usages[i] as Usage }));
    const out = await h.run({ history, revision: history.length, ...perTurn(i) });
    expect(out.status).toBe("completed");
    history = [
      ...history,
      { role: "user", blocks: [{ type: "text", text: "Hello" }] },
      { role: "assistant", blocks: [{ type: "text", text: `answer ${i}` }] },
    ];
    h.clock.advance(gapMs);
  }
}

function warnings(h: ReturnType<typeof harness>): CacheHygieneCause[] {
  return h.eventsOf("cache.hygiene").map((e) => e.cause);
}

describe("cacheHygieneGuard through the engine: each seeded misconfiguration is caught with its cause", () => {
  it("a healthy session (stable prefix, turns inside the TTL, reads through) stays silent", async () => {
    const h = harness({ ...CACHED_5M, tools: [echoTool], cacheHygiene: cacheHygieneGuard() });
    await session(h, [COLD, WARM, WARM, WARM, WARM, WARM], 2 * MIN);
    expect(warnings(h)).toEqual([]);
    expect(h.trail("context")).toEqual([]);
  });

  it("a healthy one-hour session with turns 40 minutes apart stays silent", async () => {
    const h = harness({ ...CACHED_1H, cacheHygiene: cacheHygieneGuard() });
    await session(h, [COLD_1H, WARM, WARM, WARM], 40 * MIN);
    expect(warnings(h)).toEqual([]);
  });

  it("tools that change between requests (a grant that differs each turn): tools_changed, on the sink and the context trail", async () => {
    const other = tool("other", () => ({ ok: true }));
    const h = harness({
      ...CACHED_5M,
      tools: [echoTool, other],
      cacheHygiene: cacheHygieneGuard(),
    });
    await session(h, [COLD, COLD, COLD, COLD], MIN, (i) => ({
      grant: i % 2 === 0 ? ["echo"] : ["echo", "other"],
    }));
    expect(warnings(h)).toEqual(["tools_changed"]);
    const [warning] = h.eventsOf("cache.hygiene");
    expect(warning).toMatchObject({ turnId: "turn-3", step: 1, streak: 2 });
    const context = h.trail("context");
    expect(context).toHaveLength(1);
    expect(context[0]).toMatchObject({
      trail: "context",
      sessionId: pseudonym(),
      turnId: "turn-3",
      step: 1,
      field: "cache_hygiene:tools_changed",
      decision: "warned",
    });
  });

  it("a system prompt that changes between requests (two deployments serving one session): system_changed", async () => {
    const guard = cacheHygieneGuard();
    const clock = new ManualClock();
    const a = harness({ ...CACHED_5M, clock, system: "You are version A.", cacheHygiene: guard });
    const b = harness({ ...CACHED_5M, clock, system: "You are version B.", cacheHygiene: guard });
    for (let i = 0; i < 4; i++) {
      const h = i % 2 === 0 ? a : b;
      h.model.push(scriptedText("ok", { usage: COLD }));
      await h.run({ turnId: `t${i}`, rootKey: `r${i}` });
      clock.advance(MIN);
    }
    expect([...warnings(a), ...warnings(b)]).toEqual(["system_changed"]);
    // The third request (deployment A again) is the second cold one in a row.
    expect(warnings(a)).toEqual(["system_changed"]);
  });

  it("five-minute writes on a session that speaks every eight minutes: ttl_mismatch", async () => {
    const h = harness({ ...CACHED_5M, cacheHygiene: cacheHygieneGuard() });
    await session(h, [COLD, COLD, COLD, COLD], 8 * MIN);
    expect(warnings(h)).toEqual(["ttl_mismatch"]);
  });

  it("a prompt under the model's minimum cacheable length (nothing written or read): below_minimum", async () => {
    const h = harness({
      ...CACHED_5M,
      cacheHygiene: cacheHygieneGuard({ minimumTokens: () => 1024 }),
    });
    await session(h, [UNCACHED, UNCACHED, UNCACHED], MIN);
    expect(warnings(h)).toEqual(["below_minimum"]);
  });

  it("below the minimum is seen from the usage alone when the host gives no table", async () => {
    const h = harness({ ...CACHED_5M, cacheHygiene: cacheHygieneGuard() });
    await session(h, [UNCACHED, UNCACHED, UNCACHED], MIN);
    expect(warnings(h)).toEqual(["below_minimum"]);
  });

  it("a route without cache controls that caches nothing: cache_disabled", async () => {
    const h = harness({ cacheHygiene: cacheHygieneGuard() });
    await session(h, [UNCACHED, UNCACHED, UNCACHED], MIN);
    expect(warnings(h)).toEqual(["cache_disabled"]);
  });

  it("nothing cached on a session that once read through is not cache_disabled: the long gap is named", async () => {
    const h = harness({ cacheHygiene: cacheHygieneGuard() });
    await session(h, [COLD, WARM, UNCACHED, UNCACHED], 8 * MIN);
    expect(warnings(h)).toEqual(["ttl_mismatch"]);
  });

  it("a history rewritten between turns (the previous messages are no longer a prefix): messages_changed", async () => {
    const h = harness({ ...CACHED_5M, cacheHygiene: cacheHygieneGuard() });
    await session(h, [COLD, COLD, COLD], MIN, (i) => ({
      history: [
        { role: "user", blocks: [{ type: "text", text: `rewritten ${i}` }] },
        { role: "assistant", blocks: [{ type: "text", text: "x" }] },
      ],
      revision: 2,
    }));
    expect(warnings(h)).toEqual(["messages_changed"]);
  });

  it("cold writes the guard cannot explain are named unexplained", async () => {
    const h = harness({ ...CACHED_5M, cacheHygiene: cacheHygieneGuard() });
    await session(h, [COLD, COLD, COLD], MIN);
    expect(warnings(h)).toEqual(["unexplained"]);
  });

  it("a guard that throws never reaches the turn", async () => {
    const h = harness({
      cacheHygiene: {
        kind: "cache_hygiene",
        observe: () => {
          throw new Error("broken observer");
        },
      },
    });
    await session(h, [COLD, COLD], MIN);
    expect(h.trail("context")).toEqual([]);
  });

  it("a cacheHygiene that is not a guard is refused at construction", () => {
    expect(() => harness({ cacheHygiene: { kind: "cache_hygiene" } as never })).toThrow(
      /cacheHygiene must be/,
    );
  });
});

describe("cacheHygieneGuard at its boundaries", () => {
  const at = (
    guard: ReturnType<typeof cacheHygieneGuard>,
    t: number,
    usage: Usage,
    over: Partial<ModelRequest> = {},
    session = "s",
  ) => guard.observe({ session, at: t, request: request(over), usage });

  it("warns at `after` consecutive cold warm requests, not one before; the first request of a session never counts", () => {
    const guard = cacheHygieneGuard({ after: 3 });
    expect(at(guard, 0, COLD)).toBeUndefined(); // first: not warm
    expect(at(guard, 1, COLD)).toBeUndefined(); // streak 1
    expect(at(guard, 2, COLD)).toBeUndefined(); // streak 2
    expect(at(guard, 3, COLD)).toEqual({ cause: "unexplained", streak: 3 });
    expect(at(guard, 4, COLD)).toBeUndefined(); // same cause: said once
    expect(
      at(guard, 5, COLD, {
        tools: [{ name: "t", description: "d", inputSchema: { type: "object" } }],
      }),
    ).toEqual({ cause: "tools_changed", streak: 5 });
  });

  it("reads of exactly half the prompt are not cold; one token fewer is", () => {
    const guard = cacheHygieneGuard({ after: 1 });
    at(guard, 0, COLD);
    expect(
      at(guard, 1, {
        inputTokens: 500,
        outputTokens: 1,
        cacheReadTokens: 1_000,
        cacheWrite5mTokens: 500,
      }),
    ).toBeUndefined();
    expect(
      at(guard, 2, {
        inputTokens: 501,
        outputTokens: 1,
        cacheReadTokens: 999,
        cacheWrite5mTokens: 500,
      }),
    ).toEqual({ cause: "unexplained", streak: 1 });
  });

  it("a request that reads through ends the streak", () => {
    const guard = cacheHygieneGuard();
    at(guard, 0, COLD);
    expect(at(guard, 1, COLD)).toBeUndefined();
    expect(at(guard, 2, WARM)).toBeUndefined();
    expect(at(guard, 3, COLD)).toBeUndefined();
    expect(at(guard, 4, COLD)).toEqual({ cause: "unexplained", streak: 2 });
  });

  it("warm is within warmWithinMs of the previous request, at the limit and not one over", () => {
    const guard = cacheHygieneGuard({ after: 1, warmWithinMs: 1_000 });
    at(guard, 0, COLD);
    expect(at(guard, 1_000, COLD, { cache: { ttl: "1h" } })?.cause).toBe("unexplained");
    expect(at(guard, 2_001, COLD)).toBeUndefined();
  });

  it("the TTL gap: at the TTL is not a mismatch, one millisecond over is", () => {
    const guard = cacheHygieneGuard({ after: 1, warmWithinMs: 3_600_000 });
    at(guard, 0, COLD);
    expect(at(guard, 300_000, COLD)?.cause).toBe("unexplained");
    const other = cacheHygieneGuard({ after: 1 });
    at(other, 0, COLD);
    expect(at(other, 300_001, COLD)?.cause).toBe("ttl_mismatch");
    const hour = cacheHygieneGuard({ after: 1 });
    at(hour, 0, COLD_1H, { cache: { ttl: "1h" } });
    expect(at(hour, 300_001, COLD_1H, { cache: { ttl: "1h" } })?.cause).toBe("unexplained");
  });

  it("the minimum: a prompt at it is not below it, one token under is", () => {
    const guard = cacheHygieneGuard({
      after: 1,
      minimumTokens: (model) => (model === "m" ? 1_000 : undefined),
    });
    at(guard, 0, COLD);
    const at1000: Usage = {
      inputTokens: 1_000,
      outputTokens: 1,
      cacheWrite5mTokens: 0,
      cacheReadTokens: 0,
    };
    const at999: Usage = {
      inputTokens: 999,
      outputTokens: 1,
      cacheWrite5mTokens: 0,
      cacheReadTokens: 0,
    };
    expect(at(guard, 1, { ...at1000, inputTokens: 100, cacheWrite5mTokens: 900 })?.cause).toBe(
      "unexplained",
    );
    const g2 = cacheHygieneGuard({ after: 1, minimumTokens: () => 1_000 });
    at(g2, 0, COLD);
    expect(at(g2, 1, { ...at999, inputTokens: 99, cacheWrite5mTokens: 900 })?.cause).toBe(
      "below_minimum",
    );
  });

  it("sessions are kept apart, and the oldest is forgotten past maxSessions", () => {
    const guard = cacheHygieneGuard({ after: 1, maxSessions: 2 });
    at(guard, 0, COLD, {}, "a");
    at(guard, 0, COLD, {}, "b");
    expect(at(guard, 1, COLD, {}, "a")?.cause).toBe("unexplained");
    at(guard, 1, COLD, {}, "c"); // evicts b (a was seen more recently)
    expect(at(guard, 2, COLD, {}, "b")).toBeUndefined(); // b starts over: not warm
    expect(at(guard, 2, COLD, {}, "a")).toBeUndefined(); // a already warned with this cause
  });

  it("onWarning hears each warning; a throwing one is swallowed", () => {
    const heard: string[] = [];
    const guard = cacheHygieneGuard({
      after: 1,
      onWarning: (n) => heard.push(`${n.session}:${n.cause}:${n.streak}:${n.model}`),
    });
    at(guard, 0, COLD);
    at(guard, 1, COLD);
    expect(heard).toEqual(["s:unexplained:1:m"]);
    const loud = cacheHygieneGuard({
      after: 1,
      onWarning: () => {
        throw new Error("host sink broke");
      },
    });
    at(loud, 0, COLD);
    expect(at(loud, 1, COLD)).toEqual({ cause: "unexplained", streak: 1 });
  });

  it("bad options are a typed error", () => {
    for (const bad of [
      { after: 0 },
      { after: 1.5 },
      { warmWithinMs: -1 },
      { maxSessions: 0 },
      { minimumTokens: 5 as never },
      { onWarning: "x" as never },
    ]) {
      expect(() => cacheHygieneGuard(bad)).toThrow(CacheHygieneConfigError);
    }
  });
});
