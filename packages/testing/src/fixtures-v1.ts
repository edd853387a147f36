/**
 * The read checks of the v1 fixture: records written by the schema and code as released at commit
 * f53caac (record version 1), read by this build after its migrations ran. Each durable store keeps
 * its own copy of the fixture and of `reads.json` (what the old stores returned, by read name) and
 * passes both in; see the stores' `test/fixtures/v1/README.md` for how they were made.
 */
import {
  ErasedError,
  type ExecutionClaim,
  type ExecutionRecord,
  FenceError,
  type Scope,
  SessionLabelConflictError,
  SessionLabelErasedError,
  SettlementConflictError,
  type SettlementInput,
  type SettlementRecord,
  trailId,
} from "@alma-harness/core";
import type { AdmissionFixture } from "./admissions.js";
import type { AuditFixture } from "./audit.js";
import { claimOf, type ExecutionFixture } from "./execution.js";
import { rejects, type TestApi, userMsg } from "./harness.js";
import type { LabelFixture } from "./labels.js";
import type { ResultFixture } from "./results.js";
import type { SessionFixture } from "./sessions.js";
import { type SettlementFixture, settlementOf } from "./settlements.js";

/** The stores a durable implementation hands out, by their names in a composition. */
export type V1Stores = AdmissionFixture &
  SessionFixture &
  ResultFixture &
  SettlementFixture &
  LabelFixture &
  AuditFixture & {
    readonly journal: ExecutionFixture["execution"];
    readonly rootResults: NonNullable<ResultFixture["rootResults"]>;
  };

/** `reads.json`: each read's recorded answer, and the root ids of the fixture's turns. */
export type V1Reads = Readonly<Record<string, unknown>> & {
  readonly roots: Readonly<Record<string, string>>;
};

/** The fixture's clock: `NOW` just after it was written, `LATER` past every retention. */
const T0 = Date.UTC(2026, 0, 15, 9, 0, 0);
const NOW = T0 + 60_000;
const LATER = T0 + 400 * 86_400_000;
const DAY = "2026-01-15";
const SCOPE_A: Scope = { org: "clinic-a", uid: "u1" };
const SCOPE_B: Scope = { org: "clinic-b", uid: "u7" };
/** A scope erased as a whole. */
const SEALED: Scope = { org: "clinic-c", uid: "u9" };

/** As the generator wrote it: JSON, with an absent record as `null`. */
const asRecorded = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null));

function recordedIn(READS: V1Reads) {
  return <T>(name: string): T => {
    if (!(name in READS)) throw new Error(`reads.json has no "${name}"`);
    return READS[name] as T;
  };
}

/** The reads of the fixture's generator, by the same names (see the README). */
function readsOf(s: V1Stores, roots: V1Reads["roots"]): Record<string, () => Promise<unknown>> {
  const out: Record<string, () => Promise<unknown>> = {
    "sessions.load A/s1": () => s.sessions.load(SCOPE_A, "s1"),
    "sessions.load A/s3 (erased)": () => s.sessions.load(SCOPE_A, "s3"),
    "sessions.load B/s1": () => s.sessions.load(SCOPE_B, "s1"),
    "sessions.list A": () => s.sessions.list(SCOPE_A),
    "sessions.list B": () => s.sessions.list(SCOPE_B),
    "sessions.findEvents A/s1": () => s.sessions.findEvents(SCOPE_A, "s1", ["evt-1"]),
    "admissions.holder A/s1": () => s.admissions.holder(SCOPE_A, "s1"),
    "journal.list A": () => s.journal.list(SCOPE_A),
    "journal.list B": () => s.journal.list(SCOPE_B),
    "settlements.list A": () => s.settlements.list(SCOPE_A),
    "settlements.list A/s1": () => s.settlements.list(SCOPE_A, { sessionId: "s1" }),
    "settlements.list A turn": () => s.settlements.list(SCOPE_A, { turnId: roots.toolTurn }),
    "settlements.list B": () => s.settlements.list(SCOPE_B),
    "settlements.pending A billing": () => s.settlements.pending(SCOPE_A, "billing"),
    "settlements.pending B billing": () => s.settlements.pending(SCOPE_B, "billing"),
    "spend.peek A/s1": () => s.spend.peek(SCOPE_A, "s1", DAY),
    "spend.peek A/s3": () => s.spend.peek(SCOPE_A, "s3", DAY),
    "spend.peek B/s1": () => s.spend.peek(SCOPE_B, "s1", DAY),
    "spend.tenantDays clinic-a": () => s.spend.tenantDays("clinic-a"),
    "spend.tenantDays clinic-b": () => s.spend.tenantDays("clinic-b"),
    "labels.get A/s1": () => s.labels.get(SCOPE_A, "s1"),
    "labels.get A/s3 (erased)": () => s.labels.get(SCOPE_A, "s3"),
    "labels.get B/s1": () => s.labels.get(SCOPE_B, "s1"),
    "audit.query A": () => s.audit.query(SCOPE_A, { limit: 500 }),
    "audit.query B": () => s.audit.query(SCOPE_B, { limit: 500 }),
    "audit.query A turn": () => s.audit.query(SCOPE_A, { turnId: roots.toolTurn, limit: 500 }),
    "audit.query A cost": () => s.audit.query(SCOPE_A, { trail: "cost" }),
    "audit.query A page": () => s.audit.query(SCOPE_A, { limit: 10 }),
  };
  for (let n = 1; n <= 6; n++)
    out[`admissions.get adm_fx000${n}`] = () =>
      s.admissions.get(n === 4 ? SCOPE_B : SCOPE_A, `adm_fx000${n}`);
  for (const [name, root] of Object.entries(roots)) {
    const scope = name === "otherTenant" ? SCOPE_B : SCOPE_A;
    out[`rootResults.get ${name}`] = () => s.rootResults.get(scope, root, NOW);
    out[`rootResults.get ${name} later`] = () => s.rootResults.get(scope, root, LATER);
    out[`results.get ${name} (a root id)`] = () => s.results.get(scope, root, NOW);
    for (const step of [1, 2])
      out[`results.get ${name} step ${step}`] = () =>
        s.results.get(scope, `${root}:step:${step}`, NOW);
    out[`results.get ${name} step 1 later`] = () => s.results.get(scope, `${root}:step:1`, LATER);
    for (const call of [1, 2]) {
      out[`journal.get ${name} main ${call}`] = () => s.journal.get(scope, `${root}:main:${call}`);
      out[`settlements.get ${name} main ${call}`] = () =>
        s.settlements.get(scope, `${root}:main:${call}:settlement`);
    }
  }
  return out;
}

/**
 * Declares, inside the caller's `describe`, the checks of the migrated v1 fixture: every recorded
 * read answers as the old stores did, and the old records keep their guarantees. `stores` gives the
 * set the caller opened on the migrated fixture (in its `beforeAll`); the checks write to it.
 */
export function v1FixtureReadsContract(stores: () => V1Stores, READS: V1Reads, t: TestApi): void {
  const ROOTS = READS.roots;
  const recorded = recordedIn(READS);
  t.it("returns what the old stores returned, read by read", async () => {
    const s = stores();
    const table = readsOf(s, ROOTS);
    t.expect(Object.keys(table).sort()).toEqual(
      Object.keys(READS)
        .filter((k) => k !== "roots")
        .sort(),
    );
    for (const [name, read] of Object.entries(table))
      t.expect(asRecorded(await read()), name).toEqual(READS[name]);
  });

  t.it(
    "loads the sessions: the tool turn's messages, the second turn, the recorded event; the erased one empty",
    async () => {
      const s = stores();
      const view = await s.sessions.load(SCOPE_A, "s1");
      t.expect(view).toMatchObject({ revision: 7, offset: 0, erased: false });
      t.expect(view.messages.map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "assistant",
      ]);
      t.expect(view.messages[0]).toEqual({
        role: "user",
        blocks: [{ type: "text", text: "When are you open on Monday?" }],
        meta: { turn: ROOTS.toolTurn, at: T0 + 4 },
      });
      t.expect(view.messages[1]?.blocks).toEqual([
        { type: "tool_call", id: "c1", name: "opening_hours", input: { day: "monday" } },
      ]);
      t.expect(view.messages[2]?.blocks).toEqual([
        {
          type: "tool_result",
          callId: "c1",
          name: "opening_hours",
          output: { day: "monday", open: "09:00-17:00" },
          isError: false,
        },
      ]);
      t.expect(view.messages[3]?.blocks).toEqual([
        { type: "text", text: "We are open 9 to 5 on Monday." },
      ]);
      t.expect(view.messages[6]?.meta).toEqual({ event: { id: "evt-1", kind: "message" } });
      t.expect(Object.isFrozen(view.messages[0]?.blocks)).toBe(true);
      t.expect(await s.sessions.load(SCOPE_A, "s3")).toEqual({
        messages: [],
        revision: 0,
        offset: 0,
        erased: true,
      });
      t.expect((await s.sessions.load(SCOPE_A, "s2")).messages).toEqual([]);
    },
  );

  t.it(
    "returns the stored root envelope, the step results, and keeps the namespaces and tombstones apart",
    async () => {
      const s = stores();
      const root = await s.rootResults.get(SCOPE_A, ROOTS.toolTurn as string, NOW);
      t.expect(root).toMatchObject({
        resultId: ROOTS.toolTurn,
        sessionId: "s1",
        state: "stored",
        sensitivity: "internal",
      });
      const envelope = root?.envelope as {
        version: number;
        result: { reply: unknown; costMicros: number; toolCalls: unknown[] };
      };
      t.expect(envelope.version).toBe(1);
      t.expect(envelope.result.reply).toEqual([
        { type: "text", text: "We are open 9 to 5 on Monday." },
      ]);
      t.expect(envelope.result.costMicros).toBe(210);
      t.expect(envelope.result.toolCalls).toEqual([
        { id: "c1", input: { day: "monday" }, isError: false, name: "opening_hours" },
      ]);
      t.expect((await s.rootResults.get(SCOPE_A, ROOTS.uncertain as string, NOW))?.state).toBe(
        "reserved",
      );
      t.expect(await s.rootResults.get(SCOPE_A, ROOTS.erasedTurn as string, NOW)).toMatchObject({
        state: "erased",
      });
      t.expect((await s.rootResults.get(SCOPE_A, ROOTS.toolTurn as string, LATER))?.state).toBe(
        "expired",
      );
      t.expect((await s.results.get(SCOPE_A, `${ROOTS.toolTurn}:step:2`, NOW))?.envelope).toEqual({
        step: 2,
        text: "We are open 9 to 5 on Monday.",
      });
      t.expect(await s.results.get(SCOPE_A, ROOTS.toolTurn as string, NOW)).toBeUndefined();
      t.expect(await s.rootResults.get(SCOPE_B, ROOTS.toolTurn as string, NOW)).toBeUndefined();
    },
  );

  t.it("reads the journal, the settlements, the spend, the labels and the audit log", async () => {
    const s = stores();
    const completed = await s.journal.get(SCOPE_A, `${ROOTS.toolTurn}:main:1`);
    t.expect(completed).toMatchObject({
      state: "completed",
      fenceToken: 1,
      evidence: { status: "known", usage: { inputTokens: 10, outputTokens: 5 } },
      settlementId: `${ROOTS.toolTurn}:main:1:settlement`,
      clientId: "fake",
      model: "demo",
    });
    const open = await s.journal.list(SCOPE_A);
    t.expect(open.items.map((r) => [r.operationId, r.state, r.evidence])).toEqual([
      [`${ROOTS.uncertain}:main:1`, "received", { status: "unknown" }],
    ]);
    const settled = await s.settlements.get(SCOPE_A, `${ROOTS.toolTurn}:main:1:settlement`);
    t.expect(settled).toMatchObject({
      status: "applied",
      day: DAY,
      consumers: ["billing"],
      receipt: { usdMicros: 105, kind: "main" },
    });
    t.expect((await s.settlements.list(SCOPE_A)).items).toHaveLength(4);
    t.expect(
      (await s.settlements.pending(SCOPE_A, "billing")).map((r) => r.receipt.settlementId),
    ).not.toContain(`${ROOTS.toolTurn}:main:1:settlement`);
    t.expect(await s.spend.peek(SCOPE_A, "s1", DAY)).toEqual({
      sessionMicros: 315,
      tenantDayMicros: 420,
    });
    t.expect(await s.spend.tenantDays("clinic-a")).toEqual([{ day: DAY, usdMicros: 420 }]);
    t.expect(await s.labels.get(SCOPE_A, "s1")).toEqual({ channel: "whatsapp", plan: "basic" });
    const trail = await s.audit.query(SCOPE_A, { limit: 500 });
    t.expect(trail.items).toHaveLength(30);
    t.expect(trail.items[0]).toMatchObject({
      seq: 1,
      trail: "lifecycle",
      action: "turn.started",
      turnId: ROOTS.toolTurn,
    });
    t.expect(trail.items.filter((e) => e.turnId === ROOTS.uncertain).at(-1)).toMatchObject({
      trail: "lifecycle",
      action: "turn.uncertain",
    });
  });

  t.it("keeps the old records' guarantees: replays, conflicts and tombstones", async () => {
    const s = stores();
    const { status: _, ...input } = recorded<SettlementRecord>("settlements.get toolTurn main 1");
    t.expect(await s.settlements.settle(input as SettlementInput)).toMatchObject({
      status: "replayed",
    });
    const changed = { ...input, receipt: { ...input.receipt, usdMicros: 1 } } as SettlementInput;
    await rejects(t, () => s.settlements.settle(changed), SettlementConflictError);
    t.expect(await s.spend.peek(SCOPE_A, "s1", DAY)).toEqual({
      sessionMicros: 315,
      tenantDayMicros: 420,
    });

    const record = recorded<ExecutionRecord>("journal.get toolTurn main 1");
    const {
      state: _s,
      fenceToken: _f,
      evidence: _e,
      settlementId: _i,
      updatedAt: _u,
      ...claim
    } = record;
    t.expect(await s.journal.claim(claim as ExecutionClaim)).toEqual({ status: "exists", record });

    t.expect(await s.labels.put(SCOPE_A, "s1", { plan: "basic", channel: "whatsapp" })).toEqual({
      channel: "whatsapp",
      plan: "basic",
    });
    await rejects(
      t,
      () => s.labels.put(SCOPE_A, "s1", { channel: "sms" }),
      SessionLabelConflictError,
    );
    await rejects(
      t,
      () => s.labels.put(SCOPE_A, "s3", { channel: "sms" }),
      SessionLabelErasedError,
    );
    await rejects(t, () => s.labels.put(SEALED, "s1", { channel: "sms" }), SessionLabelErasedError);
    await rejects(
      t,
      () => s.results.put(SCOPE_A, `${ROOTS.erasedTurn}:step:1`, { step: 1, text: "back" }, NOW),
      ErasedError,
    );

    const admitted = await s.admissions.admit({
      scope: SCOPE_A,
      sessionId: "s3",
      rootKey: "root-s3",
      kind: "turn",
      admissionId: "adm-s3",
      now: NOW,
      deadlineAt: NOW + 60_000,
    });
    t.expect(admitted.status).toBe("admitted");
    await rejects(
      t,
      () =>
        s.sessions.append(SCOPE_A, "s3", [userMsg("back")], {
          admissionId: "adm-s3",
          now: NOW + 1,
        }),
      FenceError,
    );
    await s.admissions.releaseFailed(SCOPE_A, "adm-s3");

    t.expect(await s.journal.reconcileExpired({ now: LATER })).toEqual([]);
    t.expect(await s.admissions.releaseExpired({ now: LATER, graceMs: 0 })).toEqual([]);
  });
}

/**
 * New writes on the migrated fixture, on a fresh copy: admits, appends, claims with a reservation
 * on top of the old spend and settles, which releases it. `held` reads the reservation rows (at once or as a promise).
 */
export async function v1FixtureWrites(
  s: V1Stores,
  READS: V1Reads,
  held: () => unknown,
  t: TestApi,
): Promise<void> {
  const ROOTS = READS.roots;
  const recorded = recordedIn(READS);
  const admission = await s.admissions.admit({
    scope: SCOPE_A,
    sessionId: "s1",
    rootKey: "root-new",
    kind: "turn",
    admissionId: "adm-new",
    now: NOW,
    deadlineAt: NOW + 60_000,
  });
  t.expect(admission.status).toBe("admitted");
  t.expect(
    await s.sessions.append(SCOPE_A, "s1", [userMsg("Open on Tuesday?", undefined, "root-new")], {
      admissionId: "adm-new",
      now: NOW + 1,
    }),
  ).toEqual({ revision: 8 });
  const view = await s.sessions.load(SCOPE_A, "s1");
  t.expect(view.messages.slice(0, 7)).toEqual(
    recorded<{ messages: unknown[] }>("sessions.load A/s1").messages,
  );
  t.expect(view.messages[7]?.blocks).toEqual([{ type: "text", text: "Open on Tuesday?" }]);

  // The tenant day has 420 µ$ settled by the old code: a 1000 µ$ hold fits a 1420 limit exactly, one more does not.
  const limits = { perSessionUsd: 1_000_000, perTenantDayUsd: 1_420 };
  const claim = claimOf("op-new", {
    scope: SCOPE_A,
    sessionId: "s1",
    rootKey: "root-new",
    turnId: "root-new",
    createdAt: NOW + 2,
    deadlineAt: NOW + 60_000,
  });
  const claimed = await s.journal.claim(claim, {
    admissionId: "adm-new",
    reservation: { day: DAY, usdMicros: 1_000, limits, expiresAt: NOW + 3_600_000 },
  });
  t.expect(claimed.status).toBe("claimed");
  if (claimed.status !== "claimed") return;
  t.expect(await held()).toEqual([
    {
      scope: "clinic-a/u1",
      operation_id: "op-new",
      session_id: "s1",
      org: "clinic-a",
      day: DAY,
      usd_micros: 1_000,
    },
  ]);
  const over = claimOf("op-over", {
    scope: SCOPE_A,
    sessionId: "s1",
    rootKey: "root-new",
    turnId: "root-new",
    createdAt: NOW + 3,
    deadlineAt: NOW + 60_000,
  });
  t.expect(
    await s.journal.claim(over, {
      reservation: { day: DAY, usdMicros: 1, limits, expiresAt: NOW + 3_600_000 },
    }),
  ).toEqual({ status: "refused", cap: "perTenantDayUsd" });
  t.expect(await s.journal.get(SCOPE_A, "op-over")).toBeUndefined();

  await s.journal.dispatch(claimed.fence, NOW + 4);
  await s.journal.receive(
    claimed.fence,
    { status: "known", usage: { inputTokens: 10, outputTokens: 5 } },
    NOW + 5,
  );
  const settlement = settlementOf("op-new:settlement", {
    scope: SCOPE_A,
    sessionId: "s1",
    day: DAY,
    at: NOW + 6,
    consumers: ["billing"],
    receipt: { operationId: "op-new", turnId: "root-new", usdMicros: 700 },
  });
  t.expect(await s.settlements.settle(settlement)).toMatchObject({ status: "applied" });
  t.expect(await held()).toEqual([]);
  t.expect(await s.spend.peek(SCOPE_A, "s1", DAY)).toEqual({
    sessionMicros: 1_015,
    tenantDayMicros: 1_120,
  });
  t.expect(await s.spend.tenantDays("clinic-a")).toEqual([{ day: DAY, usdMicros: 1_120 }]);
  await s.journal.settle(claimed.fence, "op-new:settlement", NOW + 7);
  t.expect(await s.journal.complete(claimed.fence, NOW + 8)).toMatchObject({
    state: "completed",
    settlementId: "op-new:settlement",
  });
  t.expect((await s.journal.list(SCOPE_A)).items.map((r) => r.operationId)).toEqual([
    `${ROOTS.uncertain}:main:1`,
  ]);
  t.expect(
    (await s.settlements.list(SCOPE_A)).items.map((r) => r.receipt.settlementId).at(-1),
  ).toBe("op-new:settlement");
  t.expect(
    (await s.settlements.pending(SCOPE_A, "billing")).map((r) => r.receipt.settlementId),
  ).toHaveLength(4);

  // What was released is free again: 1120 settled + 300 fits under 1420.
  const after = claimOf("op-after", {
    scope: SCOPE_A,
    sessionId: "s1",
    rootKey: "root-new",
    turnId: "root-new",
    createdAt: NOW + 9,
    deadlineAt: NOW + 60_000,
  });
  t.expect(
    (
      await s.journal.claim(after, {
        reservation: { day: DAY, usdMicros: 300, limits, expiresAt: NOW + 3_600_000 },
      })
    ).status,
  ).toBe("claimed");

  await s.rootResults.reserve({
    scope: SCOPE_A,
    resultId: "root-new",
    sessionId: "s1",
    binding: "b-new",
    sensitivity: "internal",
    maxChars: 1000,
    expiresAt: LATER,
    createdAt: NOW + 10,
  });
  t.expect(
    await s.rootResults.put(SCOPE_A, "root-new", { reply: "Yes." }, NOW + 11, {
      admissionId: "adm-new",
    }),
  ).toMatchObject({ state: "stored", envelope: { reply: "Yes." } });
  t.expect((await s.admissions.finish(SCOPE_A, "adm-new"))?.state).toBe("finished");

  await s.audit.append({
    trail: "lifecycle",
    action: "turn.started",
    scope: SCOPE_A,
    sessionId: trailId("s1"),
    turnId: trailId("root-new"),
    at: NOW + 12,
  });
  t.expect((await s.audit.query(SCOPE_A, { turnId: "root-new" })).items).toEqual([
    {
      trail: "lifecycle",
      action: "turn.started",
      scope: SCOPE_A,
      sessionId: "s1",
      turnId: "root-new",
      at: NOW + 12,
      seq: 37,
    },
  ]);
  t.expect(await s.labels.put(SCOPE_A, "s4", { channel: "web" })).toEqual({ channel: "web" });
}

/** After the fixture is opened again: the old records still read as recorded, the new turn's append kept. */
export async function v1FixtureReopened(s: V1Stores, READS: V1Reads, t: TestApi): Promise<void> {
  t.expect(
    asRecorded(await s.rootResults.get(SCOPE_A, READS.roots.toolTurn as string, NOW)),
  ).toEqual(READS["rootResults.get toolTurn"]);
  t.expect((await s.sessions.load(SCOPE_A, "s1")).revision).toBe(8);
}
