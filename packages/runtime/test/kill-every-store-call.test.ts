import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  conversationRootKey,
  createConversationRunner,
  type UncertainTurnEvent,
} from "@alma-harness/conversation";
import { ManualClock } from "@alma-harness/core/testing";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { afterAll, describe, expect, it } from "vitest";
import {
  KILL_INPUT,
  KILL_KEY,
  KILL_REQUEST,
  KILL_SCOPE,
  KILL_SESSION,
  killConfig,
} from "./workers/kill-config.js";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const WORKER = fileURLToPath(new URL("./workers/kill-worker.ts", import.meta.url));
const IN_HANDLER = fileURLToPath(new URL("./workers/kill-handler-worker.ts", import.meta.url));
const ROOT_KEY = conversationRootKey(KILL_SCOPE, KILL_SESSION, KILL_KEY);
const dir = mkdtempSync(join(tmpdir(), "alma-kill-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Line {
  readonly type: "dispatch" | "kill" | "view";
  readonly at?: string;
  readonly status?: string;
  readonly calls?: number;
}

/** Runs a worker (by default the kill-at-a-store-call one) to its end or its kill: its lines and how it ended. */
function work(
  spec:
    | { path: string; killAt: number; mode: "before" | "after" }
    | { path: string; pure: boolean },
  worker = WORKER,
): Promise<{ lines: Line[]; signal: NodeJS.Signals | null }> {
  const child = spawn(
    process.execPath,
    ["--conditions=alma-source", "--import", "tsx", worker, JSON.stringify(spec)],
    { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
  );
  let text = "";
  child.stdout.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
  });
  return new Promise((resolve) =>
    child.on("close", (_code, signal) =>
      resolve({
        lines: text
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Line),
        signal,
      }),
    ),
  );
}

/**
 * What the host's maintenance and a redelivery of the key find after the kill, on the same file,
 * an hour later (every deadline and its grace passed).
 */
async function recover(path: string) {
  const stores = createSqliteStores({ path, commits: "each" });
  const reports: UncertainTurnEvent[] = [];
  let dispatches = 0;
  const runner = createConversationRunner({
    ...killConfig(() => {
      dispatches += 1;
    }),
    stores,
    clock: new ManualClock(Date.now() + 3_600_000),
    onUncertainTurn: (event) => reports.push(event),
  });
  try {
    const released = await runner.releaseExpired();
    const found = await runner.read(KILL_SCOPE, ROOT_KEY);
    const holder = await stores.admissions.holder(KILL_SCOPE, KILL_SESSION);
    const unresolved = await runner.listUnresolved(KILL_SCOPE);
    const again = await runner.runTurn(KILL_REQUEST);
    const log = await stores.sessions.load(KILL_SCOPE, KILL_SESSION);
    const inputs = log.messages.filter(
      (m) => m.role === "user" && m.blocks.some((b) => b.type === "text" && b.text === KILL_INPUT),
    ).length;
    const trail = (await stores.audit.query(KILL_SCOPE, { limit: 500 })).items;
    return {
      trail,
      released,
      reports,
      found,
      holder,
      unresolved: unresolved.items,
      again,
      dispatches,
      inputs,
    };
  } finally {
    stores.close();
  }
}

describe("a host process SIGKILLed at every store call of a tool turn (SQLite, each write its own commit)", () => {
  it("maintenance reports every turn it frees, lists its journal, frees the session, and a redelivery never sends a call twice", {
    timeout: 600_000,
  }, async () => {
    const full = await work({ path: join(dir, "count.db"), killAt: 0, mode: "before" });
    const end = full.lines.find((l) => l.type === "view");
    expect(end?.status).toBe("completed");
    expect(full.lines.filter((l) => l.type === "dispatch")).toHaveLength(2);
    const total = end?.calls ?? 0;
    expect(total).toBeGreaterThan(10);

    const points = Array.from({ length: total }, (_, i) => i + 1).flatMap((killAt) =>
      (["before", "after"] as const).map((mode) => ({ killAt, mode })),
    );
    const seen: string[] = [];
    // Two workers at a time: the machine's cores, not the test's logic, set the pace.
    for (let i = 0; i < points.length; i += 2) {
      await Promise.all(
        points.slice(i, i + 2).map(async ({ killAt, mode }) => {
          const path = join(dir, `kill-${killAt}-${mode}.db`);
          const run = await work({ path, killAt, mode });
          const kill = run.lines.find((l) => l.type === "kill");
          expect(run.signal, `${killAt} ${mode}`).toBe("SIGKILL");
          seen.push(`${mode} ${kill?.at}`);
          const sent = run.lines.filter((l) => l.type === "dispatch").length;
          const r = await recover(path);
          const where = `${mode} ${kill?.at}`;
          // Maintenance freed the session, and reported the turn it freed (once, cause expired).
          expect(r.holder, where).toBeUndefined();
          const freedTurn = r.released.filter((x) => x.rootKey === ROOT_KEY);
          expect(
            r.reports.filter((e) => e.rootKey === ROOT_KEY && e.cause === "expired"),
            where,
          ).toHaveLength(freedTurn.length);
          // Every call the killed process claimed is listed until the turn has a stored result.
          if (r.found?.status !== "completed" && sent > 0)
            expect(
              r.unresolved.some((x) => x.rootKey === ROOT_KEY),
              where,
            ).toBe(true);
          // A call that may have been sent is never sent again; a whole turn sends two at most.
          if (sent > 0) expect(r.dispatches, where).toBe(0);
          expect(sent + r.dispatches, where).toBeLessThanOrEqual(2);
          // The redelivery answers a documented view; a completed turn stays completed.
          expect(["completed", "reconciliation_required"], where).toContain(r.again.status);
          if (r.found?.status === "completed") expect(r.again.status, where).toBe("completed");
          // The person's message is in the session once at most.
          expect(r.inputs, where).toBeLessThanOrEqual(1);
        }),
      );
    }
    console.log(`killed at ${points.length} points (${total} store calls x before/after)`);
    expect(seen).toHaveLength(points.length);
  });
});

describe("a host process SIGKILLed inside a tool's handler (SQLite, grouped commits)", () => {
  it("an effect tool's intent and decision were durable before it ran; a pure tool left nothing of its step; neither call is sent again", {
    timeout: 120_000,
  }, async () => {
    for (const pure of [false, true]) {
      const where = pure ? "pure" : "effect";
      const path = join(dir, `in-handler-${where}.db`);
      const run = await work({ path, pure }, IN_HANDLER);
      expect(run.signal, where).toBe("SIGKILL");
      expect(
        run.lines.filter((l) => l.type === "dispatch"),
        where,
      ).toHaveLength(1);
      const r = await recover(path);
      const ofCall = r.trail.flatMap((e) =>
        e.trail === "policy" && e.callId === "call_note_1" ? [e.action] : [],
      );
      if (pure) {
        // Nothing of the step is durable: the first call is read as dispatched (its outcome unknown).
        expect(ofCall, where).toEqual([]);
        expect(
          r.trail.some((e) => e.trail === "cost"),
          where,
        ).toBe(false);
      } else {
        expect(ofCall, where).toEqual(expect.arrayContaining(["intent", "decision"]));
        expect(
          r.trail.some((e) => e.trail === "cost"),
          where,
        ).toBe(true);
      }
      // Either way the turn is freed and reported, its journal listed, and no call is sent again.
      expect(r.holder, where).toBeUndefined();
      expect(r.found?.status, where).toBe("reconciliation_required");
      expect(
        r.unresolved.some((x) => x.rootKey === ROOT_KEY),
        where,
      ).toBe(true);
      expect(r.dispatches, where).toBe(0);
      expect(r.again.status, where).toBe("reconciliation_required");
      expect(r.inputs, where).toBeLessThanOrEqual(1);
    }
  });
});
