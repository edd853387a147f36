import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EXPIRED_RELEASE_GRACE_MS, ScopeFencedError } from "@alma-harness/conversation";
import { createPostgresStores } from "@alma-harness/store-postgres";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { utcDay } from "@alma-harness/core";
import { ManualClock, SequentialIds } from "@alma-harness/core/testing";
import { FakeModelClient } from "@alma-harness/loop/testing";
import { compose, type RuntimeStores } from "@alma-harness/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { FENCE_SCOPE, fencedRunner, Gate, turnRequest } from "./fence-kit.js";
import { clinicConfig, skipNote } from "./open.js";
import { DATABASE_URL, KINDS, type OpenedStores, openStores } from "./store-kit.js";

let opened: OpenedStores[] = [];
afterEach(async () => {
  for (const o of opened) await o.close();
  opened = [];
});

async function open(kind: (typeof KINDS)[number][0]) {
  const o = await openStores(kind, "fencef");
  opened.push(o);
  return o.stores;
}

type Plan = "before" | "after";

/** One store wrapped so a test makes its next call of a method fail before its effect, or after it (executed, then reported a failure). */
function faulty<T extends object>(store: T) {
  const plans = new Map<string, Plan>();
  const proxy = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        const plan = plans.get(String(prop));
        plans.delete(String(prop));
        if (plan === "before") throw new Error(`injected failure before ${String(prop)}`);
        const out = await value.apply(target, args);
        if (plan === "after") throw new Error(`injected failure after ${String(prop)}`);
        return out;
      };
    },
  });
  return { proxy, failNext: (method: string, plan: Plan) => plans.set(method, plan) };
}

function wrapped(stores: RuntimeStores) {
  const admissions = faulty(stores.admissions);
  const sessions = faulty(stores.sessions);
  return {
    stores: { ...stores, admissions: admissions.proxy, sessions: sessions.proxy } as RuntimeStores,
    admissions,
    sessions,
  };
}

/** The stores with a journal whose next dispatch first runs `before` (a fence landing between a call's claim and its dispatch). */
function fencedBeforeDispatch(stores: RuntimeStores) {
  const hook: { before?: () => Promise<unknown> } = {};
  const journal = new Proxy(stores.journal, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        const before = prop === "dispatch" ? hook.before : undefined;
        if (before) hook.before = undefined;
        await before?.();
        return value.apply(target, args);
      };
    },
  });
  return { stores: { ...stores, journal, execution: journal } as RuntimeStores, hook };
}

const event = (id: string) => ({
  id,
  at: "2026-01-01T00:00:00Z",
  kind: "message" as const,
  role: "user" as const,
  blocks: [{ type: "text" as const, text: "Running late." }],
});

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(
    `scope fence faults and expired event admissions on ${kind}${skipNote(enabled)}`,
    () => {
      it("fenceScope executed, then reported a failure: the fence holds, a retry returns the first fence", async () => {
        const w = wrapped(await open(kind));
        const t = fencedRunner(w.stores, [scriptedText("Hi.")]);
        w.admissions.failNext("fenceScope", "after");
        await expect(
          t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" }),
        ).rejects.toThrow(/after fenceScope/);
        await expect(t.runner.runTurn(turnRequest("k1"))).rejects.toBeInstanceOf(ScopeFencedError);
        const fencedAt = t.clock.now();
        t.clock.advance(5);
        expect(
          await t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "erasure" }),
        ).toEqual({ org: "clinic-a", reason: "suspended", fencedAt });
        expect(t.model.dispatched).toBe(0);
      });

      it("a fence landing between a call's claim and its dispatch: nothing is sent, the claim ends not_dispatched (scope_fenced), zero spend", async () => {
        const stores = await open(kind);
        const w = fencedBeforeDispatch(stores);
        const t = fencedRunner(w.stores, [scriptedText("Hi.")]);
        w.hook.before = () =>
          t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" });
        expect((await t.runner.runTurn(turnRequest("k1"))).status).toBe("reconciliation_required");
        expect(t.model.dispatched).toBe(0);
        expect(t.uncertain.map((u) => [u.cause, u.released])).toEqual([["scope_fenced", true]]);
        const records = (await stores.journal.list(FENCE_SCOPE, { resolved: true })).items;
        expect(records.map((r) => [r.state, r.notDispatchedCause])).toEqual([
          ["not_dispatched", "scope_fenced"],
        ]);
        expect(await stores.spend.peek(FENCE_SCOPE, "s1", utcDay(t.clock.now()))).toEqual({
          sessionMicros: 0,
          tenantDayMicros: 0,
        });
        // After the lift the same session answers again.
        await t.runner.liftScopeFence({ org: "clinic-a" });
        expect((await t.runner.runTurn(turnRequest("k2"))).status).toBe("completed");
        expect(t.model.dispatched).toBe(1);
      });

      it("fenceScope failing before its effect fences nothing; liftScopeFence executed then failed has lifted", async () => {
        const w = wrapped(await open(kind));
        const t = fencedRunner(w.stores, [scriptedText("Hi."), scriptedText("Again.")]);
        w.admissions.failNext("fenceScope", "before");
        await expect(
          t.runner.fenceScope({ target: FENCE_SCOPE, reason: "suspended" }),
        ).rejects.toThrow(/before fenceScope/);
        expect(await t.runner.scopeFences(FENCE_SCOPE)).toEqual([]);
        expect((await t.runner.runTurn(turnRequest("k1"))).status).toBe("completed");
        await t.runner.fenceScope({ target: FENCE_SCOPE, reason: "suspended" });
        w.admissions.failNext("liftScopeFence", "after");
        await expect(t.runner.liftScopeFence(FENCE_SCOPE)).rejects.toThrow(/after liftScopeFence/);
        expect(await t.runner.scopeFences(FENCE_SCOPE)).toEqual([]);
        expect((await t.runner.runTurn(turnRequest("k2"))).status).toBe("completed");
        w.admissions.failNext("scopeFences", "before");
        await expect(t.runner.scopeFences(FENCE_SCOPE)).rejects.toThrow(/before scopeFences/);
      });

      it("a fenced turn whose mark and release fail stays held; releaseExpiredEvents never frees it, releaseExpired does (cause expired)", async () => {
        const w = wrapped(await open(kind));
        const t = fencedRunner(w.stores, [
          scriptedToolCall({ id: "c1", name: "opening_hours", input: { day: "monday" } }),
          scriptedText("x"),
        ]);
        const gate = new Gate();
        t.model.gates.set(0, gate);
        const running = t.runner.runTurn(turnRequest("k1"));
        await t.model.arrived(1);
        const deadlineAt = t.clock.now() + 120_000;
        await t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" });
        w.admissions.failNext("markUncertain", "before");
        w.admissions.failNext("releaseFailed", "before");
        w.admissions.failNext("get", "before");
        gate.open();
        expect((await running).status).toBe("reconciliation_required");
        expect(t.uncertain.map((u) => [u.cause, u.released])).toEqual([["scope_fenced", false]]);
        t.clock.set(deadlineAt + EXPIRED_RELEASE_GRACE_MS);
        expect(
          await t.runner.releaseExpiredEvents({ scope: FENCE_SCOPE, sessionId: "s1" }),
        ).toEqual([]);
        expect((await w.stores.admissions.holder(FENCE_SCOPE, "s1"))?.kind).toBe("turn");
        const released = await t.runner.releaseExpired(FENCE_SCOPE);
        expect(released.map((r) => r.kind)).toEqual(["turn"]);
        expect(t.uncertain.map((u) => u.cause)).toEqual(["scope_fenced", "expired"]);
      });

      it("releaseExpiredEvents frees the session's stuck event admission at deadline + grace, not one ms before, and no other session's", async () => {
        const w = wrapped(await open(kind));
        const t = fencedRunner(w.stores, [scriptedText("Hi.")]);
        const deadlineAt = t.clock.now() + 60_000;
        for (const sessionId of ["s1", "s2"]) {
          w.sessions.failNext("append", "before");
          w.admissions.failNext("finish", "before");
          expect(
            await t.runner.recordEvents({
              scope: FENCE_SCOPE,
              sessionId,
              events: [event(`ev-${sessionId}`)],
            }),
          ).toEqual({ status: "reconciliation_required" });
        }
        const busy = await t.runner.runTurn(turnRequest("k1"));
        expect(busy.status).toBe("busy");
        t.clock.set(deadlineAt + EXPIRED_RELEASE_GRACE_MS - 1);
        expect(
          await t.runner.releaseExpiredEvents({ scope: FENCE_SCOPE, sessionId: "s1" }),
        ).toEqual([]);
        t.clock.set(deadlineAt + EXPIRED_RELEASE_GRACE_MS);
        const released = await t.runner.releaseExpiredEvents({
          scope: FENCE_SCOPE,
          sessionId: "s1",
        });
        expect(
          released.map((r) => [r.sessionId, r.kind, r.deadlineAt, r.rootKey.startsWith("ev_")]),
        ).toEqual([["s1", "events", deadlineAt, true]]);
        expect(
          await t.runner.releaseExpiredEvents({ scope: FENCE_SCOPE, sessionId: "s1" }),
        ).toEqual([]);
        expect((await w.stores.admissions.holder(FENCE_SCOPE, "s2"))?.kind).toBe("events");
        expect((await t.runner.runTurn(turnRequest("k2"))).status).toBe("completed");
        // The batch that was never written records once when retried.
        expect(
          await t.runner.recordEvents({
            scope: FENCE_SCOPE,
            sessionId: "s1",
            events: [event("ev-s1")],
          }),
        ).toEqual({ status: "recorded", appended: 1, replayed: 0 });
        expect(t.uncertain).toEqual([]);
      });
    },
  );
}

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(
    `the maintenance tick releases a stuck event admission on ${kind}${skipNote(enabled)}`,
    () => {
      it("maintain() calls releaseExpiredEvents for a session whose recordEvents was left reconciliation_required", async () => {
        const w = wrapped(await open(kind));
        const clock = new ManualClock();
        const rt = compose(
          {
            ...clinicConfig(new FakeModelClient([scriptedText("Hi.")])),
            clock,
            ids: new SequentialIds(),
          },
          w.stores,
          async () => undefined,
        );
        const deadlineAt = clock.now() + 60_000;
        w.sessions.failNext("append", "before");
        w.admissions.failNext("finish", "before");
        expect(
          await rt.runner.recordEvents({
            scope: FENCE_SCOPE,
            sessionId: "s1",
            events: [event("ev-1")],
          }),
        ).toEqual({ status: "reconciliation_required" });
        clock.set(deadlineAt + EXPIRED_RELEASE_GRACE_MS - 1);
        expect((await rt.maintain()).released).toEqual([]);
        clock.set(deadlineAt + EXPIRED_RELEASE_GRACE_MS);
        const tick = await rt.maintain();
        expect(tick.released.map((r) => [r.sessionId, r.kind])).toEqual([["s1", "events"]]);
        expect((await rt.maintain()).released).toEqual([]);
        expect((await rt.runner.runTurn(turnRequest("k1"))).status).toBe("completed");
      });
    },
  );
}

const reopenKinds = [
  ["sqlite", true],
  ["postgres", DATABASE_URL !== undefined],
] as const;

let reopened = 0;
for (const [kind, enabled] of reopenKinds) {
  describe.skipIf(!enabled)(
    `the scope fence is durable across a reopen on ${kind}${skipNote(enabled)}`,
    () => {
      it("a fence set before the store set closed still refuses after it reopens; a lift is durable too", async () => {
        reopened += 1;
        const dir = kind === "sqlite" ? mkdtempSync(join(tmpdir(), "alma-fence-")) : "";
        const schema = `fence_reopen_${process.pid}_${reopened}`;
        const openOnce = async () =>
          kind === "sqlite"
            ? createSqliteStores({ path: join(dir, "alma.db"), commits: "grouped" })
            : await createPostgresStores({
                connectionString: DATABASE_URL,
                schema,
                rootSchema: `${schema}_root`,
                migrate: true,
                commits: "grouped",
              });
        try {
          const first = await openOnce();
          const a = fencedRunner(first, []);
          await a.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" });
          await first.close();
          const second = await openOnce();
          const b = fencedRunner(second, [scriptedText("Hi.")]);
          await expect(b.runner.runTurn(turnRequest("k1"))).rejects.toBeInstanceOf(
            ScopeFencedError,
          );
          expect(await b.runner.liftScopeFence({ org: "clinic-a" })).toBe(true);
          await second.close();
          const third = await openOnce();
          const c = fencedRunner(third, [scriptedText("Hi.")]);
          expect((await c.runner.runTurn(turnRequest("k1"))).status).toBe("completed");
          await third.close();
        } finally {
          if (dir) rmSync(dir, { recursive: true, force: true });
        }
      });
    },
  );
}
