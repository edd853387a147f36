import { conversationRootKey } from "@alma-harness/conversation";
import { defineTool } from "@alma-harness/core";
import { FakeModelClient, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { postgres, type RuntimeConfig } from "@alma-harness/runtime";
import { createPostgresStores } from "@alma-harness/store-postgres";
import { describe, expect, it } from "vitest";
import { clinicConfig } from "./open.js";

const DATABASE_URL = process.env.ALMA_TEST_DATABASE_URL;
const SCOPE = { org: "clinic-a", uid: "u1" };

function config(model: FakeModelClient, handler: () => unknown): RuntimeConfig {
  return clinicConfig(model, {
    tools: [defineTool({ name: "opening_hours", description: "Opening hours.", input: { type: "object", properties: {} }, handler })],
    caps: { perTenantDayUsd: { usd: 5, onExceeded: "block" } },
  });
}

interface Counted {
  commitCount(): number;
  roundTripCount(): number;
}

describe.skipIf(!DATABASE_URL)(`the runner on PostgreSQL with grouped commits (the postgres() default)${DATABASE_URL ? "" : " (skipped: ALMA_TEST_DATABASE_URL is not set)"}`, () => {
  it("a tool turn takes at most 5 commits, what the handler may depend on is committed before it runs, and all of it when the turn returns", async () => {
    const suffix = `${process.pid}_${Date.now().toString(36)}`;
    const names = { schema: `rt_grouped_${suffix}`, rootSchema: `rt_grouped_root_${suffix}` };
    const seenByHandler: string[] = [];
    const model = new FakeModelClient([scriptedToolCall({ id: "c1", name: "opening_hours", input: {} }), scriptedText("9 to 5.")]);
    let outside: Awaited<ReturnType<typeof createPostgresStores>> | undefined;
    const rt = await postgres({
      ...config(model, async () => {
        // Another store set (another process) sees only what is committed.
        const other = outside as NonNullable<typeof outside>;
        const trail = await other.audit.query(SCOPE, { limit: 500 });
        seenByHandler.push(...trail.items.map((e) => (e.trail === "policy" ? `policy:${e.action}` : e.trail)));
        const spend = await other.spend.tenantDays("clinic-a");
        seenByHandler.push(`spent:${spend.reduce((s, d) => s + d.usdMicros, 0) > 0}`);
        return { open: "09:00-17:00" };
      }),
      store: { connectionString: DATABASE_URL, ...names, migrate: true },
    });
    outside = await createPostgresStores({ connectionString: DATABASE_URL, ...names });
    try {
      const stores = rt.stores as unknown as Counted;
      const [commits, trips] = [stores.commitCount(), stores.roundTripCount()];
      const view = await rt.runner.runTurn({ scope: SCOPE, sessionId: "s1", idempotencyKey: "k1", input: "When are you open?", intent: { tier: "balanced", sensitivity: "internal" } });
      expect(view.status).toBe("completed");
      const perTurn = { commits: stores.commitCount() - commits, roundTrips: stores.roundTripCount() - trips };
      console.info(`postgres grouped tool turn: ${perTurn.commits} commits, ${perTurn.roundTrips} round trips`);
      expect(perTurn.commits).toBeLessThanOrEqual(5);
      expect(seenByHandler).toEqual(expect.arrayContaining(["routing", "cost", "policy:intent", "policy:decision", "spent:true"]));
      const root = await outside.rootResults.get(SCOPE, conversationRootKey(SCOPE, "s1", "k1"), Date.now());
      expect(root?.state).toBe("stored");
      expect((await outside.sessions.load(SCOPE, "s1")).messages).toHaveLength(4);
      expect(await outside.admissions.holder(SCOPE, "s1")).toBeUndefined();
      const lifecycle = (await outside.audit.query(SCOPE, { limit: 500 })).items.flatMap((e) => (e.trail === "lifecycle" ? [e.action] : []));
      expect(lifecycle).toContain("turn.completed");
    } finally {
      await rt.close();
      await outside.close();
    }
  });

  it("store: { commits: \"each\" } keeps one transaction per write", async () => {
    const suffix = `${process.pid}_${Date.now().toString(36)}_each`;
    const model = new FakeModelClient([scriptedToolCall({ id: "c1", name: "opening_hours", input: {} }), scriptedText("9 to 5.")]);
    const rt = await postgres({
      ...config(model, async () => ({ open: "09:00-17:00" })),
      store: { connectionString: DATABASE_URL, schema: `rt_each_${suffix}`, rootSchema: `rt_each_root_${suffix}`, migrate: true, commits: "each" },
    });
    try {
      const stores = rt.stores as unknown as Counted & { unit?: unknown };
      expect(stores.unit).toBeUndefined();
      const [commits, trips] = [stores.commitCount(), stores.roundTripCount()];
      const view = await rt.runner.runTurn({ scope: SCOPE, sessionId: "s1", idempotencyKey: "k1", input: "When are you open?", intent: { tier: "balanced", sensitivity: "internal" } });
      expect(view.status).toBe("completed");
      console.info(`postgres each tool turn: ${stores.commitCount() - commits} commits, ${stores.roundTripCount() - trips} round trips`);
      expect(stores.commitCount() - commits).toBeGreaterThan(5);
    } finally {
      await rt.close();
    }
  });
});
