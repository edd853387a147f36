import { type ConversationView, ScopeFencedError } from "@alma-harness/conversation";
import {
  FenceError,
  InvalidIdError,
  InvalidScopeError,
  ScopeFencedError as CoreScopeFencedError,
  ValidationError,
} from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { afterEach, describe, expect, it } from "vitest";
import { FENCE_SCOPE, fencedRunner, Gate, OTHER_UID, turnRequest } from "./fence-kit.js";
import { skipNote } from "./open.js";
import { KINDS, type OpenedStores, openStores } from "./store-kit.js";

/** Whether the journal record was dispatched (it may have been sent). */
const dispatched = (r: { readonly state: string }) =>
  r.state !== "prepared" && r.state !== "not_dispatched";

const toolThenText = () => [
  scriptedToolCall({ id: "c1", name: "opening_hours", input: { day: "monday" } }),
  scriptedText("9 to 5."),
];

let opened: OpenedStores[] = [];
afterEach(async () => {
  for (const o of opened) await o.close();
  opened = [];
});

async function open(kind: (typeof KINDS)[number][0]) {
  const o = await openStores(kind, "fence");
  opened.push(o);
  return o.stores;
}

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(
    `the scope fence through the runner on ${kind}${skipNote(enabled)}`,
    () => {
      it("a new key of a fenced org rejects with ScopeFencedError from runTurn, the stream's result and its iterator; nothing is dispatched", async () => {
        const t = fencedRunner(await open(kind), toolThenText());
        expect(
          await t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" }),
        ).toEqual({ org: "clinic-a", reason: "suspended", fencedAt: t.clock.now() });
        const error = await t.runner.runTurn(turnRequest("k1")).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ScopeFencedError);
        expect(error).toBeInstanceOf(CoreScopeFencedError);
        expect((error as ScopeFencedError).code).toBe("scope_fenced");
        const stream = t.runner.streamTurn(turnRequest("k2"));
        await expect(stream.result).rejects.toBeInstanceOf(ScopeFencedError);
        const seen: string[] = [];
        const iterated = (async () => {
          for await (const event of t.runner.streamTurn(turnRequest("k3"))) seen.push(event.type);
        })();
        await expect(iterated).rejects.toBeInstanceOf(ScopeFencedError);
        expect(seen).toEqual([]);
        // Another person of the same org is fenced by the org's fence too.
        await expect(t.runner.runTurn(turnRequest("k4", "s1", OTHER_UID))).rejects.toBeInstanceOf(
          ScopeFencedError,
        );
        expect(t.model.dispatched).toBe(0);
        expect(t.uncertain).toEqual([]);
        expect(
          await t.runner.read(
            FENCE_SCOPE,
            (await import("@alma-harness/conversation")).conversationRootKey(
              FENCE_SCOPE,
              "s1",
              "k1",
            ),
          ),
        ).toBeNull();
      });

      it("a uid fence refuses that person only; lifting it admits the same key again", async () => {
        const t = fencedRunner(await open(kind), [scriptedText("Hi."), scriptedText("Hello.")]);
        await t.runner.fenceScope({ target: FENCE_SCOPE, reason: "erasure" });
        await expect(t.runner.runTurn(turnRequest("k1"))).rejects.toBeInstanceOf(ScopeFencedError);
        expect((await t.runner.runTurn(turnRequest("k1", "s1", OTHER_UID))).status).toBe(
          "completed",
        );
        expect(await t.runner.liftScopeFence({ org: "clinic-a" })).toBe(false);
        expect(await t.runner.liftScopeFence(FENCE_SCOPE)).toBe(true);
        expect(await t.runner.scopeFences(FENCE_SCOPE)).toEqual([]);
        expect((await t.runner.runTurn(turnRequest("k1"))).status).toBe("completed");
      });

      it("a stored key still replays under a fence, from runTurn and streamTurn, without dispatching", async () => {
        const t = fencedRunner(await open(kind), [scriptedText("Hi.")]);
        const first = await t.runner.runTurn(turnRequest("k1"));
        expect(first.status).toBe("completed");
        await t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" });
        expect(await t.runner.runTurn(turnRequest("k1"))).toEqual({ ...first, replayed: true });
        const stream = t.runner.streamTurn(turnRequest("k1"));
        const events: string[] = [];
        for await (const e of stream) events.push(e.type);
        expect(events).toEqual(["result"]);
        expect(await stream.result).toEqual({ ...first, replayed: true });
        expect(t.model.dispatched).toBe(1);
      });

      it("a turn admitted before the fence, fenced while its model call runs: it dispatches nothing more and ends reconciliation_required (scope_fenced)", async () => {
        const t = fencedRunner(await open(kind), toolThenText());
        const gate = new Gate();
        t.model.gates.set(0, gate);
        const running = t.runner.runTurn(turnRequest("k1"));
        await t.model.arrived(1);
        await t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" });
        t.model.markFenced();
        gate.open();
        const view = await running;
        expect(view.status).toBe("reconciliation_required");
        expect(t.model.dispatched).toBe(1);
        expect(t.uncertain.map((u) => [u.cause, u.persisted, u.released])).toEqual([
          ["scope_fenced", false, true],
        ]);
        // Known gap (README, "The scope fence"): the tool call that came back from the call already on
        // the wire still runs its handler; no store write precedes a handler for the fence to refuse.
        expect(t.toolRuns()).toBe(1);
        // The session is free again (the release is never fenced), and a new key is refused.
        await expect(t.runner.runTurn(turnRequest("k2"))).rejects.toBeInstanceOf(ScopeFencedError);
      });

      it("a turn whose last call answers after the fence lands stores nothing: its session append is refused (scope_fenced)", async () => {
        const stores = await open(kind);
        const t = fencedRunner(stores, [scriptedText("Hi.")]);
        const gate = new Gate();
        t.model.gates.set(0, gate);
        const running = t.runner.runTurn(turnRequest("k1"));
        await t.model.arrived(1);
        await t.runner.fenceScope({ target: FENCE_SCOPE, reason: "operator" });
        gate.open();
        expect((await running).status).toBe("reconciliation_required");
        expect(t.uncertain.map((u) => [u.cause, u.persisted])).toEqual([["scope_fenced", false]]);
        expect((await stores.sessions.load(FENCE_SCOPE, "s1")).revision).toBe(0);
      });

      it("fenced while a tool runs: the next step's claim is refused, the turn ends scope_fenced after one call", async () => {
        const toolGate = new Gate();
        const t = fencedRunner(await open(kind), toolThenText(), toolGate);
        const running = t.runner.runTurn(turnRequest("k1"));
        await t.toolStarted;
        expect(t.toolRuns()).toBe(1);
        await t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" });
        t.model.markFenced();
        toolGate.open();
        expect((await running).status).toBe("reconciliation_required");
        expect(t.model.dispatched).toBe(1);
        expect(t.model.afterFence).toBe(0);
        expect(t.uncertain.map((u) => u.cause)).toEqual(["scope_fenced"]);
      });

      it("a new key in a session the admitted turn still occupies answers busy; another session of the fenced scope is refused", async () => {
        const t = fencedRunner(await open(kind), toolThenText());
        const gate = new Gate();
        t.model.gates.set(0, gate);
        const running = t.runner.runTurn(turnRequest("k1"));
        await t.model.arrived(1);
        await t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" });
        const busy = await t.runner.runTurn(turnRequest("k2"));
        expect(busy.status).toBe("busy");
        expect(await t.runner.runTurn(turnRequest("k1"))).toEqual({
          status: "in_progress",
          rootKey: (busy as { holder: string }).holder,
        });
        await expect(t.runner.runTurn(turnRequest("k3", "s2"))).rejects.toBeInstanceOf(
          ScopeFencedError,
        );
        gate.open();
        expect((await running).status).toBe("reconciliation_required");
      });

      it("N turns in flight while the fence lands: each completed before it or ends scope_fenced; no call is claimed after it returns", async () => {
        const n = 6;
        const script = [];
        for (let i = 0; i < n; i++)
          script.push(
            scriptedToolCall({ id: `c${i}`, name: "opening_hours", input: { day: "monday" } }),
          );
        // One answer for each racer that may be admitted, claim and call before the fence returns.
        script.push(scriptedText("done"), scriptedText("done"), scriptedText("done"));
        const stores = await open(kind);
        const t = fencedRunner(stores, [scriptedText("before"), scriptedText("before"), ...script]);
        const before = await Promise.all([
          t.runner.runTurn(turnRequest("b1", "sb1")),
          t.runner.runTurn(turnRequest("b2", "sb2")),
        ]);
        expect(before.map((v) => v.status)).toEqual(["completed", "completed"]);
        const gate = new Gate();
        for (let i = 2; i < 2 + n; i++) t.model.gates.set(i, gate);
        const turns: Promise<ConversationView | unknown>[] = [];
        for (let i = 0; i < n; i++)
          turns.push(t.runner.runTurn(turnRequest(`k${i}`, `s${i}`)).catch((e: unknown) => e));
        await t.model.arrived(2 + n);
        const fencing = t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" });
        // New keys racing the fence: each either admitted first (and then fenced at its claim) or refused.
        const racers = [0, 1, 2].map((i) =>
          t.runner.runTurn(turnRequest(`r${i}`, `r${i}`)).catch((e: unknown) => e),
        );
        await fencing;
        t.model.markFenced();
        // Once fenceScope returned no dispatch can land: what is dispatched now is all that ever is.
        const atFence = (await stores.journal.list(FENCE_SCOPE, { resolved: true, limit: 100 }))
          .items;
        const claimed = atFence.length;
        const dispatchedAtFence = atFence.filter(dispatched).length;
        gate.open();
        const ends = await Promise.all(turns);
        for (const end of ends) {
          if (end instanceof Error) expect(end).toBeInstanceOf(ScopeFencedError);
          else expect((end as ConversationView).status).toBe("reconciliation_required");
        }
        // A racer is refused, fenced at its claim, or (its call ungated) completed before the fence returned.
        for (const end of await Promise.all(racers)) {
          if (end instanceof Error) expect(end).toBeInstanceOf(ScopeFencedError);
          else
            expect(["reconciliation_required", "completed"]).toContain(
              (end as ConversationView).status,
            );
        }
        // No call is dispatched after the fence returned, not even one claimed just before it: the
        // provider saw exactly the calls dispatched by then, and every other claim was cancelled.
        const end = (await stores.journal.list(FENCE_SCOPE, { resolved: true, limit: 100 })).items;
        expect(end.length).toBe(claimed);
        expect(end.filter(dispatched).length).toBe(dispatchedAtFence);
        expect(t.model.dispatched).toBe(dispatchedAtFence);
        for (const r of end.filter((e) => !dispatched(e)))
          expect([r.operationId, r.state, r.notDispatchedCause]).toEqual([
            r.operationId,
            "not_dispatched",
            "scope_fenced",
          ]);
        expect(t.uncertain.map((u) => u.cause).filter((c) => c !== "scope_fenced")).toEqual([]);
        expect(t.uncertain.length).toBeGreaterThanOrEqual(n);
        for (const v of before)
          expect(
            await t.runner.runTurn(
              turnRequest(v === before[0] ? "b1" : "b2", v === before[0] ? "sb1" : "sb2"),
            ),
          ).toEqual({ ...v, replayed: true });
      });

      it("recordEvents on a fenced scope rejects with ScopeFencedError and writes nothing; after the lift the batch records once", async () => {
        const stores = await open(kind);
        const t = fencedRunner(stores, []);
        const events = [
          {
            id: "ev-1",
            at: "2026-01-01T00:00:00Z",
            kind: "message" as const,
            role: "user" as const,
            blocks: [{ type: "text" as const, text: "Late." }],
          },
        ];
        await t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "suspended" });
        await expect(
          t.runner.recordEvents({ scope: FENCE_SCOPE, sessionId: "s1", events }),
        ).rejects.toBeInstanceOf(ScopeFencedError);
        expect((await stores.sessions.load(FENCE_SCOPE, "s1")).revision).toBe(0);
        expect(await stores.admissions.holder(FENCE_SCOPE, "s1")).toBeUndefined();
        await t.runner.liftScopeFence({ org: "clinic-a" });
        expect(
          await t.runner.recordEvents({ scope: FENCE_SCOPE, sessionId: "s1", events }),
        ).toEqual({ status: "recorded", appended: 1, replayed: 0 });
      });

      it("erasure is never blocked by a fence", async () => {
        const t = fencedRunner(await open(kind), [scriptedText("Hi.")]);
        expect((await t.runner.runTurn(turnRequest("k1"))).status).toBe("completed");
        await t.runner.fenceScope({ target: { org: "clinic-a" }, reason: "erasure" });
        expect(await t.runner.eraseSession(FENCE_SCOPE, "s1")).toEqual({ fencedAdmissions: 0 });
        expect(await t.runner.eraseScope(FENCE_SCOPE)).toEqual({ fencedAdmissions: 0 });
        // The fence outlives the erasure (it was set for it): lifted only by the operator.
        expect((await t.runner.scopeFences(FENCE_SCOPE)).length).toBe(1);
      });

      it("hostile fence and release input is refused with a typed error before any I/O", async () => {
        const t = fencedRunner(await open(kind), []);
        const bad = (v: unknown) => v as never;
        await expect(
          t.runner.fenceScope({ target: bad({ org: "clinic a" }), reason: "suspended" }),
        ).rejects.toBeInstanceOf(InvalidScopeError);
        await expect(
          t.runner.fenceScope({
            target: bad({ org: "clinic-a", uid: "u1", admin: true }),
            reason: "suspended",
          }),
        ).rejects.toBeInstanceOf(InvalidScopeError);
        await expect(
          t.runner.fenceScope({ target: { org: "clinic-a" }, reason: bad("drop table") }),
        ).rejects.toBeInstanceOf(ValidationError);
        await expect(
          t.runner.fenceScope(bad({ target: { org: "clinic-a" }, reason: "suspended", now: 0 })),
        ).rejects.toBeInstanceOf(ValidationError);
        await expect(t.runner.fenceScope(bad(null))).rejects.toBeInstanceOf(ValidationError);
        await expect(t.runner.liftScopeFence(bad({ org: "../etc" }))).rejects.toBeInstanceOf(
          InvalidScopeError,
        );
        await expect(t.runner.scopeFences(bad("clinic-a"))).rejects.toBeInstanceOf(
          InvalidScopeError,
        );
        await expect(
          t.runner.releaseExpiredEvents(bad({ scope: { org: "x" }, sessionId: "s1" })),
        ).rejects.toBeInstanceOf(InvalidScopeError);
        await expect(
          t.runner.releaseExpiredEvents(bad({ scope: FENCE_SCOPE, sessionId: "has space" })),
        ).rejects.toBeInstanceOf(InvalidIdError);
        await expect(
          t.runner.releaseExpiredEvents(bad({ scope: FENCE_SCOPE, sessionId: "s1", kind: "turn" })),
        ).rejects.toBeInstanceOf(ValidationError);
        expect(await t.runner.scopeFences({ org: "clinic-a" })).toEqual([]);
        expect(new ScopeFencedError()).toBeInstanceOf(FenceError);
      });
    },
  );
}
