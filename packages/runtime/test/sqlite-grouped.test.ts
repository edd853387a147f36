import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { conversationRootKey } from "@alma-harness/conversation";
import { defineTool } from "@alma-harness/core";
import { FakeModelClient, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { type RuntimeConfig, sqlite } from "@alma-harness/runtime";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { clinicConfig } from "./open.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const SCOPE = { org: "clinic-a", uid: "u1" };

function config(model: FakeModelClient, handler: () => unknown): RuntimeConfig {
  return clinicConfig(model, {
    tools: [defineTool({ name: "opening_hours", description: "Opening hours.", input: { type: "object", properties: {} }, handler })],
    caps: { perTenantDayUsd: { usd: 5, onExceeded: "block" } },
  });
}

describe("the runner on SQLite with grouped commits (the sqlite() default)", () => {
  it("a tool turn takes at most 5 commits, what the handler may depend on is durable before it runs, and all of it when the turn returns", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alma-grouped-"));
    dirs.push(dir);
    const path = join(dir, "alma.db");
    const outside = createSqliteStores({ path, busyTimeoutMs: 0 });
    const seenByHandler: string[] = [];
    const model = new FakeModelClient([scriptedToolCall({ id: "c1", name: "opening_hours", input: {} }), scriptedText("9 to 5.")]);
    const rt = sqlite({
      ...config(model, async () => {
        // Another connection (another process) sees only what is committed.
        const trail = await outside.audit.query(SCOPE, { limit: 500 });
        seenByHandler.push(...trail.items.map((e) => (e.trail === "policy" ? `policy:${e.action}` : e.trail)));
        const spend = await outside.spend.tenantDays("clinic-a");
        seenByHandler.push(`spent:${spend.reduce((s, d) => s + d.usdMicros, 0) > 0}`);
        return { open: "09:00-17:00" };
      }),
      store: { path },
    });
    try {
      const stores = rt.stores as unknown as { commitCount(): number };
      const before = stores.commitCount();
      const view = await rt.runner.runTurn({ scope: SCOPE, sessionId: "s1", idempotencyKey: "k1", input: "When are you open?", intent: { tier: "balanced", sensitivity: "internal" } });
      expect(view.status).toBe("completed");
      expect(stores.commitCount() - before).toBeLessThanOrEqual(5);
      expect(seenByHandler).toEqual(expect.arrayContaining(["routing", "cost", "policy:intent", "policy:decision", "spent:true"]));
      const root = await outside.rootResults.get(SCOPE, conversationRootKey(SCOPE, "s1", "k1"), Date.now());
      expect(root?.state).toBe("stored");
      expect((await outside.sessions.load(SCOPE, "s1")).messages).toHaveLength(4);
      expect(await outside.admissions.holder(SCOPE, "s1")).toBeUndefined();
      const lifecycle = (await outside.audit.query(SCOPE, { limit: 500 })).items.flatMap((e) => (e.trail === "lifecycle" ? [e.action] : []));
      expect(lifecycle).toContain("turn.completed");
    } finally {
      await rt.close();
      outside.close();
    }
  });
});
