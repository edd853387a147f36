import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { conversationRootKey } from "@alma-harness/conversation";
import { defineTool, type ModelClient } from "@alma-harness/core";
import type { DurableStores } from "@alma-harness/core/stores";
import { memory, postgres, type Runtime, type RuntimeConfig, sqlite } from "@alma-harness/runtime";
import { afterAll, expect } from "vitest";

const DATABASE_URL = process.env.ALMA_TEST_DATABASE_URL;

/**
 * The three compositions a runtime test runs on: memory, SQLite in a fresh file, PostgreSQL in a
 * fresh schema pair (enabled when ALMA_TEST_DATABASE_URL is set). Temporary folders go with the file.
 */
export function compositions(
  prefix: string,
): readonly [string, (cfg: RuntimeConfig) => Promise<Runtime>, boolean][] {
  const dirs: string[] = [];
  let schemas = 0;
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  return [
    ["memory", async (cfg) => memory(cfg), true],
    [
      "sqlite",
      async (cfg) => {
        const dir = mkdtempSync(join(tmpdir(), `alma-${prefix}-`));
        dirs.push(dir);
        return sqlite({ ...cfg, store: { path: join(dir, "alma.db") } });
      },
      true,
    ],
    [
      "postgres",
      async (cfg) => {
        schemas += 1;
        const suffix = `${process.pid}_${schemas}`;
        return postgres({
          ...cfg,
          store: {
            connectionString: DATABASE_URL,
            schema: `${prefix}_${suffix}`,
            rootSchema: `${prefix}_root_${suffix}`,
            migrate: true,
          },
        });
      },
      DATABASE_URL !== undefined,
    ],
  ];
}

/** The trail key of the runtime tests (PostgreSQL requires one; a fixed one makes pseudonyms predictable). */
export const RUNTIME_TRAIL_KEY = "runtime-test-trail-key-of-32-bytes-or-more";

export const skipNote = (enabled: boolean) =>
  enabled ? "" : " (skipped: ALMA_TEST_DATABASE_URL is not set)";

/** A clinic's runner configuration around one model on the `demo` price row ($3 / $15 per Mtok). */
export function clinicConfig(model: ModelClient, over: Partial<RuntimeConfig> = {}): RuntimeConfig {
  return {
    clients: [model],
    policy: {
      resolve: () => ({ clientId: model.id, model: "demo", maxOutputTokens: 512, cache: false }),
    },
    prompt: "You are the front desk of a clinic.",
    prices: { version: "p1", models: { demo: { rates: { input: 3, output: 15 } } } },
    policyVersion: "policy-1",
    priceVersion: "p1",
    configRevision: "rev-1",
    resultRetentionMs: 86_400_000,
    runTimeoutMs: 120_000,
    maxCalls: 6,
    maxInputChars: 20_000,
    trailKey: RUNTIME_TRAIL_KEY,
    ...over,
  };
}

export const TURN_SCOPE = { org: "clinic-a", uid: "u1" };

/**
 * `clinicConfig` with one tool, `opening_hours` (its `handler` given), under a blocking $5
 * tenant-day cap; `pure`: declared pure (no effect outside the process, no commit of its own).
 */
export function openingHoursConfig(
  model: ModelClient,
  handler: () => unknown,
  pure = false,
): RuntimeConfig {
  return clinicConfig(model, {
    tools: [
      defineTool({
        name: "opening_hours",
        description: "Opening hours.",
        input: { type: "object", properties: {} },
        ...(pure ? { pure } : {}),
        handler,
      }),
    ],
    caps: { perTenantDayUsd: { usd: 5, onExceeded: "block" } },
  });
}

/** A store set beside the runner's (another connection, another process): it sees only what is committed. */
export type OutsideStores = Pick<
  DurableStores,
  "audit" | "spend" | "rootResults" | "sessions" | "admissions"
>;

/** What a tool handler records of what `outside` sees while it runs: the trails written so far and whether spend is counted. */
export async function seenFromOutside(outside: OutsideStores): Promise<string[]> {
  const trail = await outside.audit.query(TURN_SCOPE, { limit: 500 });
  const spend = await outside.spend.tenantDays(TURN_SCOPE.org);
  return [
    ...trail.items.map((e) => (e.trail === "policy" ? `policy:${e.action}` : e.trail)),
    `spent:${spend.reduce((s, d) => s + d.usdMicros, 0) > 0}`,
  ];
}

/** One tool turn of session `s1` (key `k1`), checked to complete. */
export async function runToolTurn(rt: Runtime): Promise<void> {
  const view = await rt.runner.runTurn({
    scope: TURN_SCOPE,
    sessionId: "s1",
    idempotencyKey: "k1",
    input: "When are you open?",
    intent: { tier: "balanced", sensitivity: "internal" },
  });
  expect(view.status).toBe("completed");
}

/**
 * The whole-turn check: what the handler depended on (routing, cost, policy trails, counted spend)
 * was committed before it ran (`pure`: nothing of its step was, only the first call's claim), and
 * once the turn has returned `outside` sees all of it: the root result stored, the four messages,
 * the admission released and the turn completed.
 */
export async function expectWholeTurn(
  outside: OutsideStores,
  seenByHandler: readonly string[],
  pure = false,
): Promise<void> {
  if (pure) {
    // Committed before the pure handler: the first call's claim and its routing, nothing after it.
    expect(seenByHandler).toContain("routing");
    for (const later of ["cost", "policy:intent", "policy:decision", "spent:true"])
      expect(seenByHandler).not.toContain(later);
  } else
    expect(seenByHandler).toEqual(
      expect.arrayContaining(["routing", "cost", "policy:intent", "policy:decision", "spent:true"]),
    );
  const root = await outside.rootResults.get(
    TURN_SCOPE,
    conversationRootKey(TURN_SCOPE, "s1", "k1"),
    Date.now(),
  );
  expect(root?.state).toBe("stored");
  expect((await outside.sessions.load(TURN_SCOPE, "s1")).messages).toHaveLength(4);
  expect(await outside.admissions.holder(TURN_SCOPE, "s1")).toBeUndefined();
  const lifecycle = (await outside.audit.query(TURN_SCOPE, { limit: 500 })).items.flatMap((e) =>
    e.trail === "lifecycle" ? [e.action] : [],
  );
  expect(lifecycle).toContain("turn.completed");
}
