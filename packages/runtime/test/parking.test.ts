import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AskRefusedError, type ConversationView } from "@alma-harness/conversation";
import { defineTool, type ToolContext } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import type { PermissionController } from "@alma-harness/loop";
import { FakeModelClient, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { postgres, type Runtime, type RuntimeConfig, sqlite } from "@alma-harness/runtime";
import { afterAll, describe, expect, it } from "vitest";
import { clinicConfig, skipNote } from "./open.js";

const DATABASE_URL = process.env.ALMA_TEST_DATABASE_URL;
const SCOPE = { org: "clinic-a", uid: "p-1" } as const;
const TTL = 10 * 60_000;

/**
 * Two runtimes on one store (two processes' worth: two connections, two engines, two models): a
 * fresh SQLite file, or a fresh PostgreSQL schema pair, each with its runtime's default commits.
 */
function pairs(): readonly [
  string,
  (a: RuntimeConfig, b: RuntimeConfig) => Promise<Runtime[]>,
  boolean,
][] {
  const dirs: string[] = [];
  let n = 0;
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  return [
    [
      "sqlite",
      async (a, b) => {
        const dir = mkdtempSync(join(tmpdir(), "alma-parking-"));
        dirs.push(dir);
        const path = join(dir, "alma.db");
        return [sqlite({ ...a, store: { path } }), sqlite({ ...b, store: { path } })];
      },
      true,
    ],
    [
      "postgres",
      async (a, b) => {
        n += 1;
        const schemas = {
          schema: `park_${process.pid}_${n}`,
          rootSchema: `park_root_${process.pid}_${n}`,
        };
        const store = { connectionString: DATABASE_URL, ...schemas, migrate: true };
        const one = await postgres({ ...a, store });
        return [one, await postgres({ ...b, store })];
      },
      DATABASE_URL !== undefined,
    ],
  ];
}

/** The booking tool: its policy asks; it counts its runs (across both runtimes) and can hang. */
function booking(hang: () => boolean = () => false) {
  const runs: string[] = [];
  const tool = defineTool({
    name: "book",
    description: "Books a slot.",
    input: { type: "object", properties: { slot: { type: "string" } }, required: ["slot"] },
    authorize: (input) => ({ action: "write", subject: `slot:${String(input.slot)}` }),
    handler: (input, ctx: ToolContext) => {
      runs.push(ctx.effectKey);
      // A handler that never returns stands for a process that died inside it.
      if (hang()) return new Promise(() => undefined);
      return { booked: input.slot };
    },
  });
  return { tool, runs };
}

const asks: PermissionController = { decide: (r) => (r.tool === "book" ? "ask" : "allow") };
const bookCall = { id: "c1", name: "book", input: { slot: "mon-9" } };
const request = (key: string, input = "Book me Monday at nine") => ({
  scope: SCOPE,
  sessionId: "s1",
  idempotencyKey: key,
  input,
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
});

function awaiting(view: ConversationView) {
  if (view.status !== "awaiting_approval") throw new Error(`expected a park, got ${view.status}`);
  return view;
}

/**
 * Process A parks the booking; process B is ready to take it. Each has its own clock, both at the
 * same instant: `clock` is B's, so advancing it never wakes A (a dead process notices nothing).
 */
async function parked(
  open: (a: RuntimeConfig, b: RuntimeConfig) => Promise<Runtime[]>,
  hang?: () => boolean,
) {
  const b = booking(hang);
  const clock = new ManualClock();
  const clockA = new ManualClock();
  const modelA = new FakeModelClient([
    scriptedToolCall(bookCall, { text: "Booking." }),
    scriptedText("Booked."),
  ]);
  const modelB = new FakeModelClient([scriptedText("Booked."), scriptedText("Booked.")]);
  const over = {
    tools: [b.tool],
    permissions: asks,
    asks: "park" as const,
    approvalTtlMs: TTL,
  };
  const [one, two] = (await open(
    clinicConfig(modelA, { ...over, clock: clockA }),
    clinicConfig(modelB, { ...over, clock }),
  )) as [Runtime, Runtime];
  const view = awaiting(await one.runner.runTurn(request("k1")));
  const askId = view.asks[0]?.askId as string;
  return { one, two, modelA, modelB, runs: b.runs, clock, view, askId };
}

async function closeAll(...runtimes: Runtime[]) {
  for (const r of runtimes) await r.close();
}

describe("parked turns across two processes on one store (issue 25)", () => {
  for (const [kind, open, enabled] of pairs()) {
    describe.skipIf(!enabled)(`${kind}${skipNote(enabled)}`, () => {
      it("ask in one process, approve in the other: one handler run, no model call sent twice", async () => {
        const p = await parked(open);
        try {
          expect((await p.two.runner.runTurn(request("k2", "hello"))).status).toBe("busy");
          expect((await p.two.runner.parkedAsks({ org: SCOPE.org })).map((a) => a.askId)).toEqual([
            p.askId,
          ]);
          const r = await p.two.runner.resolveAsk({
            scope: SCOPE,
            askId: p.askId,
            decision: "approve",
            by: "nurse",
          });
          expect(r.view.status).toBe("completed");
          expect(p.runs).toHaveLength(1);
          expect([p.modelA.calls, p.modelB.calls]).toEqual([1, 1]);
          expect((await p.one.runner.read(SCOPE, p.view.rootKey))?.status).toBe("completed");
          expect(await p.one.runner.parkedAsks({ org: SCOPE.org })).toEqual([]);
        } finally {
          await closeAll(p.one, p.two);
        }
      });

      it("two processes resuming the same decided turn produce one resume", async () => {
        const p = await parked(open);
        try {
          const d = await p.one.runner.decideAsk({
            scope: SCOPE,
            askId: p.askId,
            decision: "approve",
            by: "nurse",
          });
          expect(d.ready).toBe(true);
          const views = await Promise.all([
            p.one.runner.resume(SCOPE, p.view.rootKey),
            p.two.runner.resume(SCOPE, p.view.rootKey),
          ]);
          expect(views.map((v) => v.status)).toContain("completed");
          expect(p.runs).toHaveLength(1);
          // One resumed model call in all: the first call, before the park, was never sent again.
          expect(p.modelA.calls + p.modelB.calls).toBe(2);
        } finally {
          await closeAll(p.one, p.two);
        }
      });

      it("an approval for another input digest is refused, and nothing runs", async () => {
        const p = await parked(open);
        try {
          const refused = await p.two.runner
            .resolveAsk({
              scope: SCOPE,
              askId: p.askId,
              decision: "approve",
              by: "nurse",
              digest: "f".repeat(64),
            })
            .catch((e: unknown) => e);
          expect(refused).toBeInstanceOf(AskRefusedError);
          expect((refused as AskRefusedError).reason).toBe("digest_mismatch");
          expect(p.runs).toEqual([]);
          expect((await p.two.runner.read(SCOPE, p.view.rootKey))?.status).toBe(
            "awaiting_approval",
          );
        } finally {
          await closeAll(p.one, p.two);
        }
      });

      it("a decision token is checked in any process: forged, replayed and expired tokens are refused", async () => {
        const p = await parked(open);
        try {
          const token = (await p.one.runner.askToken(SCOPE, p.askId)) as string;
          const base = { scope: SCOPE, askId: p.askId, decision: "approve" as const, by: "nurse" };
          const reason = (e: unknown) => (e instanceof AskRefusedError ? e.reason : String(e));
          const forged = `${token.slice(0, -2)}${token.endsWith("00") ? "11" : "00"}`;
          expect(await p.two.runner.resolveAsk({ ...base, token: forged }).catch(reason)).toBe(
            "token_forged",
          );
          expect(p.runs).toEqual([]);
          const r = await p.two.runner.resolveAsk({ ...base, token });
          expect(r.view.status).toBe("completed");
          expect(await p.one.runner.resolveAsk({ ...base, token }).catch(reason)).toMatch(
            /token_replayed|unknown_ask/,
          );
          expect(p.runs).toHaveLength(1);
        } finally {
          await closeAll(p.one, p.two);
        }
      });

      it("a token past the ask's expiry is refused in the other process, and nothing runs", async () => {
        const p = await parked(open);
        try {
          const token = (await p.one.runner.askToken(SCOPE, p.askId)) as string;
          p.clock.advance(TTL);
          const refused = await p.two.runner
            .resolveAsk({ scope: SCOPE, askId: p.askId, decision: "approve", by: "nurse", token })
            .catch((e: unknown) => e);
          expect((refused as AskRefusedError).reason).toBe("token_expired");
          expect(p.runs).toEqual([]);
        } finally {
          await closeAll(p.one, p.two);
        }
      });

      it("an expired ask is the kernel's denial at the other process's tick, and the session is freed", async () => {
        const p = await parked(open);
        try {
          p.clock.advance(TTL);
          await p.two.runner.releaseExpired();
          expect((await p.one.runner.read(SCOPE, p.view.rootKey))?.status).toBe("completed");
          expect(p.runs).toEqual([]);
          expect((await p.one.runner.runTurn(request("k2", "hello"))).status).not.toBe("busy");
        } finally {
          await closeAll(p.one, p.two);
        }
      });

      it("a resumed run that died inside a non-replay-safe handler ends reconciliation_required with one run", async () => {
        let hanging = true;
        const p = await parked(open, () => hanging);
        try {
          void p.one.runner
            .resolveAsk({ scope: SCOPE, askId: p.askId, decision: "approve", by: "nurse" })
            .catch(() => undefined);
          for (let i = 0; i < 400 && p.runs.length === 0; i++)
            await new Promise((r) => setTimeout(r, 5));
          expect(p.runs).toHaveLength(1);
          hanging = false;
          p.clock.advance(120_000);
          const [view] = await p.two.runner.resumeDue();
          expect(view?.status).toBe("reconciliation_required");
          expect(p.runs).toHaveLength(1);
          expect((await p.two.runner.read(SCOPE, p.view.rootKey))?.status).toBe(
            "reconciliation_required",
          );
        } finally {
          // The dead run's process: its connections go; the hung handler holds none of them.
          await closeAll(p.one, p.two);
        }
      });

      it("a first run that dies inside a replay-safe tool goes on in the other process from its checkpoint", async () => {
        let hanging = true;
        const runs: string[] = [];
        const read = defineTool({
          name: "hours",
          description: "Opening hours.",
          input: { type: "object", properties: { day: { type: "string" } }, required: ["day"] },
          replaySafe: true,
          handler: (input, ctx: ToolContext) => {
            runs.push(ctx.effectKey);
            if (hanging) return new Promise(() => undefined);
            return { day: input.day, open: "9-17" };
          },
        });
        const modelA = new FakeModelClient([
          scriptedToolCall(
            { id: "h1", name: "hours", input: { day: "mon" } },
            { text: "Checking." },
          ),
        ]);
        const modelB = new FakeModelClient([
          scriptedText("Open 9 to 5."),
          scriptedText("Welcome."),
        ]);
        const clock = new ManualClock();
        const over = { tools: [read], asks: "park" as const };
        const [one, two] = (await open(
          clinicConfig(modelA, { ...over, clock: new ManualClock() }),
          clinicConfig(modelB, { ...over, clock }),
        )) as [Runtime, Runtime];
        try {
          void one.runner.runTurn(request("k1", "When are you open?")).catch(() => undefined);
          for (let i = 0; i < 400 && runs.length === 0; i++)
            await new Promise((r) => setTimeout(r, 5));
          hanging = false;
          clock.advance(120_000);
          const [view] = await two.runner.resumeDue();
          expect(view?.status).toBe("completed");
          expect(runs).toHaveLength(2);
          expect(runs[1]).toBe(runs[0]);
          expect([modelA.calls, modelB.calls]).toEqual([1, 1]);
          expect((await two.runner.runTurn(request("k2", "thanks"))).status).toBe("completed");
        } finally {
          await closeAll(one, two);
        }
      });
    });
  }
});
