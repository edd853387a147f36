import type { ModelChoice, RecallResult, RecallSource } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import { memory } from "@alma-harness/runtime";
import { describe, expect, it } from "vitest";
import { serverPerTest } from "../../providers/test/helpers/server.js";
import { RUNTIME_TRAIL_KEY } from "./open.js";
import { breakBetween, type Prefix, prefixOf } from "./prefix/property.js";
import { clientOf, MODELS, SHAPES, type Shape, sseOf } from "./prefix/wire.js";

/**
 * Issue 18: recalled text enters the request after the cached prefix. On the real request bodies
 * of the four adapters over a local socket, a session run with recall and the same session run
 * without it send, on every turn, the same tools, system prompt and history byte for byte: the
 * first difference is inside the turn's own input message, after the person's words. And with
 * recall, each turn's request repeats the previous request's prefix up to its last cache
 * breakpoint (the recalled block is persisted with the input and replayed byte-identical).
 */
const server = serverPerTest();
const SCOPE = { org: "clinic-a", uid: "u1" };
const RECALLED: RecallResult = {
  facts: [
    {
      scope: SCOPE,
      factId: "f1",
      key: "allergy.penicillin",
      text: "Allergic to penicillin.",
      source: { sessionId: "old", turnId: "t0", at: 0 },
      sensitivity: "internal",
      confidence: 0.9,
    },
  ],
  episodes: [],
};
const source: RecallSource = { name: "fixed", recall: async () => RECALLED };

async function session(shape: Shape, withRecall: boolean): Promise<unknown[]> {
  const clock = new ManualClock();
  const model = clientOf(shape, `${server.url}/v1`);
  const rt = memory({
    clients: [model],
    policy: {
      resolve: (): ModelChoice => ({
        clientId: model.id,
        model: MODELS[shape],
        maxOutputTokens: 256,
        cache: shape === "anthropic" ? { ttl: "5m" } : false,
      }),
    },
    prompt: "You are the front desk of a clinic.",
    volatile: (ctx) => `Now: ${ctx.now}.`,
    ...(withRecall ? { recall: { source } } : {}),
    prices: {
      version: "p1",
      models: {
        [MODELS[shape]]: { rates: { input: 3, output: 15, cacheRead: 0.3, cacheWrite5m: 3.75 } },
      },
    },
    policyVersion: "policy-1",
    priceVersion: "p1",
    configRevision: "rev-1",
    resultRetentionMs: 86_400_000,
    runTimeoutMs: 120_000,
    maxCalls: 4,
    maxInputChars: 20_000,
    trailKey: RUNTIME_TRAIL_KEY,
    clock,
  });
  const bodies: unknown[] = [];
  for (let i = 0; i < 4; i++) {
    clock.advance(1_000);
    server.enqueue({ body: sseOf(shape, { text: `answer ${i}` }) });
    const seen = server.requests.length;
    const view = await rt.runner.runTurn({
      scope: SCOPE,
      sessionId: "s1",
      idempotencyKey: `k${i}`,
      input: `Question ${i} about my allergy`,
      intent: { tier: "balanced", sensitivity: "internal" },
    });
    expect(view.status).toBe("completed");
    bodies.push(...server.requests.slice(seen).map((r) => r.body));
  }
  await rt.close();
  return bodies;
}

const firstDifference = (a: Prefix, b: Prefix) => {
  let i = 0;
  while (i < a.segments.length && a.segments[i] === b.segments[i]) i++;
  return i;
};

describe("recall never breaks the prompt cache (issue 18)", () => {
  for (const shape of SHAPES) {
    it(`${shape}: the same bytes with and without recall up to the first recalled block; with recall the prefix grows through it`, async () => {
      const plain = (await session(shape, false)).map((b) => prefixOf(shape, b));
      const recalled = await session(shape, true);
      const prefixes = recalled.map((b) => prefixOf(shape, b));
      expect(prefixes).toHaveLength(4);
      // The first turn: everything before its input message (tools, system), and the person's words, are the same bytes.
      const first = plain[0] as Prefix;
      const inputStart = first.segments.length - (shape === "anthropic" ? 2 : 1);
      const d0 = firstDifference(first, prefixes[0] as Prefix);
      expect(d0).toBeGreaterThanOrEqual(inputStart);
      expect(first.regions.slice(0, d0).filter((r) => r !== "messages").length).toBe(
        first.regions.filter((r) => r !== "messages").length,
      );
      for (const [i, p] of prefixes.entries()) {
        // Every later turn differs from the session without recall only from the first recalled block on.
        expect(firstDifference(plain[i] as Prefix, p)).toBe(d0);
        expect(JSON.stringify(recalled[i])).toContain("Allergic to penicillin.");
        // And with recall each request repeats the previous one's prefix up to its last breakpoint.
        if (i > 0) expect(breakBetween(prefixes[i - 1] as Prefix, p)).toBeUndefined();
      }
      if (shape === "anthropic") expect((prefixes.at(-1) as Prefix).breakpoint).toBeGreaterThan(d0);
    });
  }
});
