import {
  type AdmissionStore,
  DuplicateEventError,
  FenceError,
  InvalidIdError,
  type Msg,
  type Scope,
  type SessionStore,
  ValidationError,
} from "@alma-harness/core";
import { admitWith } from "./admissions.js";
import {
  assistantMsg,
  type Closable,
  deepFrozen,
  type Factory,
  fixtureTest,
  type FixtureTest,
  refusesBadIds,
  refusesBadScopes,
  rejects,
  rotationMsg,
  SCOPE_A,
  SCOPE_A2,
  SCOPE_B,
  settleAll,
  T0,
  type TestApi,
  unsafe,
  userMsg,
} from "./harness.js";
import { listingTests } from "./listing.js";

export interface SessionFixture extends Closable {
  readonly sessions: SessionStore;
  /** The admission store the session store's fenced appends check. */
  readonly admissions: AdmissionStore;
}

type Declare = FixtureTest<SessionFixture>;

/** Admits `admissionId` on the session (deadline one minute out) and returns it. */
async function open(
  fx: SessionFixture,
  admissionId: string,
  sessionId = "s1",
  scope: Scope = SCOPE_A,
): Promise<string> {
  const result = await admitWith(fx.admissions, { scope, sessionId, admissionId });
  if (result.status !== "admitted") throw new Error(`session ${sessionId} is busy`);
  return admissionId;
}

function append(
  fx: SessionFixture,
  messages: readonly Msg[],
  admissionId: string,
  sessionId = "s1",
  scope: Scope = SCOPE_A,
  now = T0 + 1,
) {
  return fx.sessions.append(scope, sessionId, messages, { admissionId, now });
}

/** The `SessionStore` contract: an append-only transcript, fenced on the session's admission. */
export function sessionStoreContract(
  name: string,
  factory: Factory<SessionFixture>,
  t: TestApi,
): void {
  const test = fixtureTest(t, factory);
  t.describe(`${name}: SessionStore contract`, () => {
    test("a session never written loads empty at revision 0", async ({ sessions }) => {
      t.expect(await sessions.load(SCOPE_A, "s1")).toEqual({
        messages: [],
        revision: 0,
        offset: 0,
        erased: false,
      });
    });

    test("append writes the batch under an active admission and advances the revision by its length", async (fx) => {
      const a = await open(fx, "a1");
      const batch = [userMsg("hi", "e1", "turn-1"), assistantMsg("hello", "turn-1")];
      t.expect(await append(fx, batch, a)).toEqual({ revision: 2 });
      t.expect(await append(fx, [userMsg("more")], a)).toEqual({ revision: 3 });
      const view = await fx.sessions.load(SCOPE_A, "s1");
      t.expect(view).toEqual({
        messages: [...batch, userMsg("more")],
        revision: 3,
        offset: 0,
        erased: false,
      });
      t.expect(deepFrozen(view)).toBe(true);
    });

    fencingTests(t, test);
    eventTests(t, test);

    test("load starts at the last rotation marker; revision and offset count the whole log", async (fx) => {
      const a = await open(fx, "a1");
      await append(fx, [userMsg("1"), assistantMsg("2")], a);
      await append(fx, [rotationMsg("summary one", 2), userMsg("3")], a);
      await append(fx, [assistantMsg("4"), rotationMsg("summary two", 5), userMsg("5")], a);
      const view = await fx.sessions.load(SCOPE_A, "s1");
      t.expect([view.revision, view.offset]).toEqual([7, 5]);
      t.expect(view.messages).toEqual([rotationMsg("summary two", 5), userMsg("5")]);
    });

    test("a turn's batch with its rotation marker first: the view starts there, the kept tail re-recorded after it", async (fx) => {
      const a = await open(fx, "a1");
      await append(
        fx,
        [
          userMsg("1", "e1", "t1"),
          assistantMsg("2", "t1"),
          userMsg("3", "e3", "t2"),
          assistantMsg("4", "t2"),
        ],
        a,
      );
      const turn: Msg[] = [
        {
          ...rotationMsg("summary", 2),
          meta: { rotation: { replaces: 2 }, turn: "t3", at: T0 + 5 },
        },
        { ...userMsg("3", undefined, "t2") },
        assistantMsg("4", "t2"),
        {
          role: "user",
          blocks: [{ type: "text", text: "5" }],
          meta: { turn: "t3", at: T0 + 5, event: { id: "e5", kind: "input" } },
        },
        {
          role: "assistant",
          blocks: [{ type: "text", text: "6" }],
          meta: { turn: "t3", at: T0 + 6 },
        },
      ];
      t.expect(await append(fx, turn, a)).toEqual({ revision: 9 });
      const view = await fx.sessions.load(SCOPE_A, "s1");
      t.expect([view.revision, view.offset]).toEqual([9, 4]);
      t.expect(view.messages).toEqual(turn);
      t.expect(
        (await fx.sessions.findEvents(SCOPE_A, "s1", ["e3", "e5"])).map((m) => m.meta?.turn),
      ).toEqual(["t2", "t3"]);
    });

    test("meta.at is kept as given; a time that is not epoch milliseconds is refused", async (fx) => {
      const a = await open(fx, "a1");
      const timed: Msg = {
        role: "user",
        blocks: [{ type: "text", text: "x" }],
        meta: { turn: "t1", at: T0 },
      };
      await append(fx, [timed], a);
      t.expect((await fx.sessions.load(SCOPE_A, "s1")).messages).toEqual([timed]);
      for (const at of [-1, 1.5, "2026-01-01", null]) {
        await rejects(
          t,
          () => append(fx, unsafe([{ role: "user", blocks: [], meta: { at } }]), a),
          ValidationError,
        );
      }
      t.expect((await fx.sessions.load(SCOPE_A, "s1")).revision).toBe(1);
    });

    test("stored messages are detached from the caller's objects", async (fx) => {
      const a = await open(fx, "a1");
      const msg = { role: "user" as const, blocks: [{ type: "text" as const, text: "original" }] };
      await append(fx, [msg], a);
      msg.blocks[0] = { type: "text", text: "changed" };
      t.expect((await fx.sessions.load(SCOPE_A, "s1")).messages).toEqual([userMsg("original")]);
    });

    erasureTests(t, test);
    listingTests<SessionFixture>(t, test, {
      what: "sessions",
      def: 50,
      max: 100,
      seed: async (fx, n, scope) => {
        for (let i = 0; i < n; i++) {
          const session = `s${String(i).padStart(3, "0")}`;
          const a = await open(fx, `adm-${session}`, session, scope);
          await append(fx, [userMsg(`m${i}`)], a, session, scope, T0 + i);
        }
      },
      list: (fx, scope, opts) => fx.sessions.list(scope, opts),
      key: (item) => (item as { sessionId: string }).sessionId,
    });

    test("list summarizes each session: id, revision and the time of its last append", async (fx) => {
      const a = await open(fx, "a1");
      await append(fx, [userMsg("1"), userMsg("2")], a, "s1", SCOPE_A, T0 + 5);
      await append(fx, [userMsg("3")], a, "s1", SCOPE_A, T0 + 9);
      t.expect(await fx.sessions.list(SCOPE_A)).toEqual({
        items: [{ sessionId: "s1", revision: 3, updatedAt: T0 + 9 }],
      });
    });

    validationTests(t, test);
  });
}

function fencingTests(t: TestApi, test: Declare): void {
  test("an append under an uncertain, finished or released admission throws FenceError and writes nothing", async (fx) => {
    for (const [admissionId, end] of [
      ["a-unc", fx.admissions.markUncertain],
      ["a-fin", fx.admissions.finish],
      ["a-rel", fx.admissions.releaseFailed],
    ] as const) {
      await open(fx, admissionId);
      await append(fx, [userMsg(`before ${admissionId}`)], admissionId);
      await end.call(fx.admissions, SCOPE_A, admissionId);
      await rejects(t, () => append(fx, [userMsg("late")], admissionId), FenceError);
      if (admissionId === "a-unc") await fx.admissions.releaseFailed(SCOPE_A, admissionId);
    }
    t.expect((await fx.sessions.load(SCOPE_A, "s1")).revision).toBe(3);
  });

  test("a stale admission appends nothing once a newer one holds the session", async (fx) => {
    await open(fx, "old");
    await fx.admissions.finish(SCOPE_A, "old");
    await open(fx, "new");
    await rejects(t, () => append(fx, [userMsg("stale")], "old"), FenceError);
    await append(fx, [userMsg("fresh")], "new");
    t.expect((await fx.sessions.load(SCOPE_A, "s1")).messages).toEqual([userMsg("fresh")]);
  });

  test("the admission must exist and belong to this scope and session, and now must be before its deadline", async (fx) => {
    await open(fx, "a1");
    await rejects(t, () => append(fx, [userMsg("x")], "unknown"), FenceError);
    await rejects(t, () => append(fx, [userMsg("x")], "a1", "s2"), FenceError);
    await rejects(t, () => append(fx, [userMsg("x")], "a1", "s1", SCOPE_A2), FenceError);
    await rejects(t, () => append(fx, [userMsg("x")], "a1", "s1", SCOPE_B), FenceError);
    await rejects(
      t,
      () => append(fx, [userMsg("x")], "a1", "s1", SCOPE_A, T0 + 60_000),
      FenceError,
    );
    await append(fx, [userMsg("in time")], "a1", "s1", SCOPE_A, T0 + 59_999);
    for (const [scope, session] of [
      [SCOPE_A, "s2"],
      [SCOPE_A2, "s1"],
      [SCOPE_B, "s1"],
    ] as const) {
      t.expect((await fx.sessions.load(scope, session)).revision).toBe(0);
    }
  });

  test("the fence is checked in the append's transaction: once markUncertain returns, nothing more lands", async (fx) => {
    await open(fx, "a1");
    const appends = Array.from({ length: 8 }, (_, i) => append(fx, [userMsg(`m${i}`)], "a1"));
    const mark = fx.admissions.markUncertain(SCOPE_A, "a1");
    const { outcomes } = await settleAll<unknown>([...appends, mark]);
    const landed = outcomes
      .slice(0, 8)
      .flatMap((o, i) => (o.status === "fulfilled" ? [`m${i}`] : []));
    for (const o of outcomes.slice(0, 8))
      if (o.status === "rejected") t.expect(o.reason).toBeInstanceOf(FenceError);
    const texts = (await fx.sessions.load(SCOPE_A, "s1")).messages.map(
      (m) => (m.blocks[0] as { text: string }).text,
    );
    t.expect([...texts].sort()).toEqual(landed.sort());
    await rejects(t, () => append(fx, [userMsg("after")], "a1"), FenceError);
    t.expect((await fx.sessions.load(SCOPE_A, "s1")).revision).toBe(landed.length);
  });
}

function eventTests(t: TestApi, test: Declare): void {
  test("an append carrying an event id already in the log throws DuplicateEventError and writes nothing of the batch", async (fx) => {
    const a = await open(fx, "a1");
    await append(fx, [userMsg("first", "e1")], a);
    const error = await rejects(
      t,
      () => append(fx, [userMsg("new", "e2"), userMsg("again", "e1")], a),
      DuplicateEventError,
    );
    t.expect((error as DuplicateEventError).eventId).toBe("e1");
    t.expect((await fx.sessions.load(SCOPE_A, "s1")).revision).toBe(1);
    await append(fx, [userMsg("new", "e2")], a);
  });

  test("an event id repeated inside one batch is a duplicate too", async (fx) => {
    const a = await open(fx, "a1");
    await rejects(
      t,
      () => append(fx, [userMsg("x", "e1"), userMsg("y", "e1")], a),
      DuplicateEventError,
    );
    t.expect((await fx.sessions.load(SCOPE_A, "s1")).revision).toBe(0);
  });

  test("event ids are unique per session: the same id in another session or scope is free", async (fx) => {
    await open(fx, "a1");
    await append(fx, [userMsg("x", "e1")], "a1");
    await open(fx, "a2", "s2");
    await append(fx, [userMsg("x", "e1")], "a2", "s2");
    await open(fx, "a1", "s1", SCOPE_B);
    await append(fx, [userMsg("x", "e1")], "a1", "s1", SCOPE_B);
  });

  test("findEvents returns the messages carrying the given ids, in log order", async (fx) => {
    const a = await open(fx, "a1");
    await append(fx, [userMsg("one", "e1"), assistantMsg("reply")], a);
    await append(fx, [userMsg("two", "e2"), userMsg("three", "e3")], a);
    const found = await fx.sessions.findEvents(SCOPE_A, "s1", ["e3", "missing", "e1"]);
    t.expect(found).toEqual([userMsg("one", "e1"), userMsg("three", "e3")]);
    t.expect(deepFrozen(found)).toBe(true);
    t.expect(await fx.sessions.findEvents(SCOPE_A, "s1", [])).toEqual([]);
    t.expect(await fx.sessions.findEvents(SCOPE_B, "s1", ["e1"])).toEqual([]);
    t.expect(await fx.sessions.findEvents(SCOPE_A2, "s1", ["e1"])).toEqual([]);
  });
}

function erasureTests(t: TestApi, test: Declare): void {
  test("an erased session loads empty with erased: true, and later appends throw FenceError", async (fx) => {
    await open(fx, "a1");
    await append(fx, [userMsg("secret", "e1")], "a1");
    await fx.sessions.erase(SCOPE_A, "s1");
    t.expect(await fx.sessions.load(SCOPE_A, "s1")).toEqual({
      messages: [],
      revision: 0,
      offset: 0,
      erased: true,
    });
    await rejects(t, () => append(fx, [userMsg("again")], "a1"), FenceError);
    await fx.admissions.finish(SCOPE_A, "a1");
    await open(fx, "a2");
    await rejects(t, () => append(fx, [userMsg("revive")], "a2"), FenceError);
    t.expect(await fx.sessions.findEvents(SCOPE_A, "s1", ["e1"])).toEqual([]);
    t.expect((await fx.sessions.list(SCOPE_A)).items).toEqual([]);
  });

  test("erasing a session never written tombstones it too; other sessions and scopes are untouched", async (fx) => {
    await fx.sessions.erase(SCOPE_A, "never");
    await open(fx, "a1", "never");
    await rejects(t, () => append(fx, [userMsg("x")], "a1", "never"), FenceError);
    await open(fx, "b1", "never", SCOPE_B);
    await append(fx, [userMsg("kept")], "b1", "never", SCOPE_B);
    t.expect((await fx.sessions.load(SCOPE_B, "never")).revision).toBe(1);
    await fx.sessions.erase(SCOPE_A, "never");
  });
}

function validationTests(t: TestApi, test: Declare): void {
  test("invalid scopes and ids are refused before any I/O (even on a closed store)", async ({
    sessions,
  }, closeNow) => {
    await closeNow();
    const opts = { admissionId: "a1", now: T0 };
    await refusesBadScopes(
      t,
      (scope) => sessions.load(scope, "s1"),
      (scope) => sessions.append(scope, "s1", [userMsg("x")], opts),
      (scope) => sessions.findEvents(scope, "s1", ["e1"]),
      (scope) => sessions.list(scope),
      (scope) => sessions.erase(scope, "s1"),
    );
    await refusesBadIds(
      t,
      (id) => sessions.load(SCOPE_A, id),
      (id) => sessions.append(SCOPE_A, id, [userMsg("x")], opts),
      (id) => sessions.append(SCOPE_A, "s1", [userMsg("x")], { ...opts, admissionId: id }),
      (id) => sessions.findEvents(SCOPE_A, "s1", [id]),
      (id) => sessions.erase(SCOPE_A, id),
    );
  });

  test("malformed batches are refused whole, before the fence is even read", async (fx) => {
    const a = await open(fx, "a1");
    const bad: unknown[] = [
      [],
      [{ role: "system", blocks: [] }],
      [{ role: "user", blocks: [{ type: "html", text: "x" }] }],
      [{ role: "user", blocks: [], extra: 1 }],
      [
        userMsg("ok"),
        {
          role: "user",
          blocks: [{ type: "text", text: "x" }],
          meta: { event: { id: "e1", kind: "reply" } },
        },
      ],
      [{ role: "user", blocks: [{ type: "text", text: Number.NaN }] }],
    ];
    for (const batch of bad) await rejects(t, () => append(fx, unsafe(batch), a), ValidationError);
    const badEventId = {
      role: "user",
      blocks: [],
      meta: { event: { id: "has space", kind: "input" } },
    };
    await rejects(t, () => append(fx, unsafe([userMsg("ok"), badEventId]), a), InvalidIdError);
    await rejects(
      t,
      () => fx.sessions.append(SCOPE_A, "s1", [userMsg("x")], { admissionId: a, now: unsafe(-1) }),
      ValidationError,
    );
    t.expect((await fx.sessions.load(SCOPE_A, "s1")).revision).toBe(0);
  });
}
