import {
  type AuditEvent,
  type AuditLog,
  type AuditRecord,
  TrailValueError,
  trailId,
  ValidationError,
} from "@alma-harness/core";
import {
  type Closable,
  deepFrozen,
  type Factory,
  fixtureTest,
  type FixtureTest,
  refusesBadIds,
  refusesBadScopes,
  rejects,
  SCOPE_A,
  SCOPE_A2,
  SCOPE_B,
  T0,
  type TestApi,
  unsafe,
} from "./harness.js";
import { listingTests } from "./listing.js";

export interface AuditFixture extends Closable {
  readonly audit: AuditLog;
}

/** Trail values of the fixtures (the constructors are the only way to make one). */
const v = trailId;

export function recallEvent(
  over: Partial<Record<keyof AuditEvent | "source", unknown>> = {},
  items = 1,
): AuditEvent {
  return {
    trail: "recall",
    scope: SCOPE_A,
    sessionId: v("s1"),
    turnId: v("turn-1"),
    at: T0,
    source: v("notes"),
    items,
    ...over,
  } as AuditEvent;
}

const strip = (records: readonly AuditRecord[]) => records.map(({ seq: _seq, ...event }) => event);

/** The `AuditLog` contract: awaited appends, read back per scope in append order. */
export function auditLogContract(name: string, factory: Factory<AuditFixture>, t: TestApi): void {
  const test = fixtureTest(t, factory);
  t.describe(`${name}: AuditLog contract`, () => {
    test("query reads a scope's events in append order, with increasing seq, frozen", async ({
      audit,
    }) => {
      const events: AuditEvent[] = [
        recallEvent({}, 3),
        {
          trail: "access",
          scope: SCOPE_A,
          sessionId: v("s1"),
          turnId: v("turn-1"),
          callId: v("call-1"),
          at: T0 + 1,
          tool: v("lookup"),
          resource: v("patient"),
          action: "read",
        },
        {
          trail: "lifecycle",
          scope: SCOPE_A,
          sessionId: v("s1"),
          turnId: v("turn-1"),
          at: T0 + 2,
          action: "turn.completed",
          step: 2,
        },
        recallEvent({ at: T0 - 5 }, 1),
      ];
      for (const event of events) await audit.append(event);
      const { items, nextCursor } = await audit.query(SCOPE_A);
      t.expect(strip(items)).toEqual(events);
      t.expect(nextCursor).toBeUndefined();
      const seqs = items.map((r) => r.seq);
      t.expect(seqs.every((s, i) => i === 0 || s > (seqs[i - 1] as number))).toBe(true);
      t.expect(deepFrozen(items)).toBe(true);
    });

    test("query filters by session, turn and trail", async ({ audit }) => {
      await audit.append(recallEvent({ sessionId: "s1", turnId: "t1" }));
      await audit.append(recallEvent({ sessionId: "s2", turnId: "t2" }));
      await audit.append({
        trail: "context",
        scope: SCOPE_A,
        sessionId: v("s1"),
        turnId: v("t2"),
        at: T0,
        step: 1,
        field: v("tools"),
        decision: "refused",
      });
      t.expect(
        (await audit.query(SCOPE_A, { sessionId: v("s1") })).items.map((r) => r.turnId),
      ).toEqual(["t1", "t2"]);
      t.expect(
        (await audit.query(SCOPE_A, { turnId: "t2" })).items.map((r) => r.sessionId),
      ).toEqual(["s2", "s1"]);
      t.expect(
        (await audit.query(SCOPE_A, { trail: "context" })).items.map((r) => r.trail),
      ).toEqual(["context"]);
      t.expect(
        (await audit.query(SCOPE_A, { sessionId: v("s2"), trail: "context" })).items,
      ).toEqual([]);
    });

    test("scope isolation: another scope never reads these events", async ({ audit }) => {
      await audit.append(recallEvent());
      await audit.append(recallEvent({ scope: SCOPE_B }));
      t.expect((await audit.query(SCOPE_A2, { sessionId: v("s1") })).items).toEqual([]);
      t.expect((await audit.query(SCOPE_B)).items.map((r) => r.scope)).toEqual([SCOPE_B]);
      t.expect((await audit.query(SCOPE_A)).items.map((r) => r.scope)).toEqual([SCOPE_A]);
    });

    test("a stored event is detached from the caller's object", async ({ audit }) => {
      const event = { ...recallEvent(), source: v("before") };
      await audit.append(event);
      event.source = v("after");
      t.expect(
        (await audit.query(SCOPE_A)).items.map((r) => (r as { source?: string }).source),
      ).toEqual(["before"]);
    });

    listingTests<AuditFixture>(t, test, {
      what: "audit events",
      def: 100,
      max: 500,
      seed: async (fx, n, scope) => {
        for (let i = 0; i < n; i++)
          await fx.audit.append(recallEvent({ scope, turnId: `t${String(i).padStart(4, "0")}` }));
      },
      list: (fx, scope, opts) => fx.audit.query(scope, opts),
      key: (item) => (item as AuditRecord).turnId,
    });

    validationTests(t, test);
  });
}

function validationTests(t: TestApi, test: FixtureTest<AuditFixture>): void {
  test("invalid events and queries are refused before any I/O (even on a closed log), recording nothing", async ({
    audit,
  }, closeNow) => {
    await closeNow();
    await refusesBadScopes(
      t,
      (scope) => audit.append(recallEvent({ scope })),
      (scope) => audit.query(scope),
    );
    await refusesBadIds(
      t,
      (id) => audit.append(recallEvent({ sessionId: id })),
      (id) => audit.query(SCOPE_A, { turnId: id }),
    );
    const bad: unknown[] = [
      { ...recallEvent(), trail: "gossip" },
      { ...recallEvent(), query: "raw text the trail must never hold" },
      { ...recallEvent(), tool: "recall has no tool field" },
      { ...recallEvent(), at: -1 },
    ];
    for (const event of bad) await rejects(t, () => audit.append(unsafe(event)), ValidationError);
    // The trail rule: a string that is not an identifier, kind, count or hash is refused, whatever the field.
    const text: unknown[] = [
      { ...recallEvent(), source: "Ana García" },
      { ...recallEvent(), source: "line\nbreak" },
      { ...recallEvent(), source: "x".repeat(201) },
      {
        trail: "access",
        scope: SCOPE_A,
        sessionId: v("s1"),
        turnId: v("turn-1"),
        at: T0,
        tool: v("lookup"),
        resource: "patients named Ana",
        action: "read",
      },
      {
        trail: "policy",
        scope: SCOPE_A,
        sessionId: v("s1"),
        turnId: v("turn-1"),
        at: T0,
        action: "intent",
        tool: v("book"),
        authorization: { action: v("book"), subject: "Ana García" },
      },
    ];
    for (const event of text) await rejects(t, () => audit.append(unsafe(event)), TrailValueError);
    await rejects(t, () => audit.query(SCOPE_A, { trail: unsafe("gossip") }), ValidationError);
  });
}
