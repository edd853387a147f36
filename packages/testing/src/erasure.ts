import {
  type CostSettlementStore,
  type EpisodeStore,
  ErasedError,
  type ErasureReport,
  type ProfileStore,
  erasedSessionMark,
  isErasedMark,
  type Scope,
  type SessionErasure,
  type SessionLabelStore,
  type SessionStore,
  type SpendStore,
  type UsageInbox,
} from "@alma-harness/core";
import type { ScanHit } from "./erasure-scan.js";
import {
  type Closable,
  type Factory,
  refusesBadIds,
  refusesBadScopes,
  rejects,
  type TestApi,
} from "./harness.js";

/**
 * One session's canaries: values a careful auditor plants and then looks for. Each holds its tag,
 * so two sessions' canaries never overlap. `sessionId` is a phone number, as hosts use them.
 */
export interface Canaries {
  readonly patient: string;
  readonly sessionId: string;
  readonly apiKey: string;
  readonly query: string;
  readonly mediaUri: string;
  /** A tool name the model invents (not registered). */
  readonly tool: string;
  /** A label value the host attaches (labels allow only `[A-Za-z0-9_.:-]`). */
  readonly label: string;
}

const PHONES = { alpha: "+15550001001", bravo: "+15550002002", charlie: "+15550003003" } as const;

export function canariesOf(tag: keyof typeof PHONES): Canaries {
  const T = tag.toUpperCase();
  return Object.freeze({
    patient: `Zebulon Quackenbush-${T}`,
    sessionId: PHONES[tag],
    apiKey: `sk-live-${tag}-9f8e7d6c5b4a3921`,
    query: `insulin dosage for quackenbush ${tag}`,
    mediaUri: `https://media.example/scans/${tag}-7731.png`,
    tool: `exfiltrate_${tag}_records`,
    label: `mrn-${T}-77310`,
  });
}

export const needlesOf = (c: Canaries): readonly string[] => [
  c.patient,
  c.sessionId,
  c.apiKey,
  c.query,
  c.mediaUri,
  c.tool,
  c.label,
];

/**
 * A runner over one real store set (memory, SQLite or PostgreSQL), and a generic scan of everything
 * that set holds. `seed` writes a session full of canaries through the runner (a turn that puts
 * each canary in its input, a tool call, the tool's output, an unregistered tool call and the
 * reply) plus its labels; `retry` runs the session's turn again (its first key, then a new one) and
 * answers the views' statuses (the model must not be called).
 */
export interface ErasureFixture extends Closable {
  seed(scope: Scope, c: Canaries): Promise<void>;
  retry(scope: Scope, c: Canaries): Promise<readonly string[]>;
  /**
   * Runs a new turn of the (seeded) session and, while its tool handler runs, erases the session
   * from outside the turn (as another request of the host would): answers the turn's view status
   * and the erasure's report.
   */
  eraseMidTurn(
    scope: Scope,
    c: Canaries,
  ): Promise<{ readonly status: string; readonly report: ErasureReport }>;
  /**
   * Runs a new turn of the (seeded) session whose one model call (a text reply) waits after its
   * claim, reservation and dispatch; erases the session from outside meanwhile, then lets the call
   * finish: answers the turn's view status and the erasure's report.
   */
  eraseMidCall(
    scope: Scope,
    c: Canaries,
  ): Promise<{ readonly status: string; readonly report: ErasureReport }>;
  /** Starts one plain turn (one model call, a text reply) of each of `sessionIds` at once, runs `during` alongside, and answers the turns' statuses. */
  turnsWhile(
    scope: Scope,
    sessionIds: readonly string[],
    during: () => Promise<unknown>,
  ): Promise<readonly string[]>;
  eraseSession(scope: Scope, sessionId: string): Promise<ErasureReport>;
  eraseScope(scope: Scope): Promise<ErasureReport>;
  /** Every stored value holding a needle: every table and column (SQL), or a deep walk of the stores' state (memory). */
  scan(needles: readonly string[]): Promise<readonly ScanHit[]>;
  /** The store files whose raw bytes must hold no erased canary (SQLite: the databases and their WALs). */
  files?(): readonly string[];
  /** Reads the raw bytes of `files()` for the needles. */
  scanFiles?(needles: readonly string[]): readonly ScanHit[];
  readonly stores: {
    readonly sessions: SessionStore;
    readonly labels: SessionLabelStore;
    readonly spend: SpendStore;
    readonly settlements: CostSettlementStore;
    readonly erasure: SessionErasure;
    /** When the set has one (and `seed` records a late observation per session): kept under the erased session's mark. */
    readonly usageInbox?: UsageInbox;
    /** When the set has them (and `seed` writes an episode and a fact per session holding its canaries): gone with the session. */
    readonly episodes?: EpisodeStore;
    readonly profiles?: ProfileStore;
  };
}

const A: Scope = Object.freeze({ org: "clinic-erase", uid: "desk-1" });
const B: Scope = Object.freeze({ org: "clinic-erase", uid: "desk-2" });

/** The scope's receipts as (settlement id, amount) pairs, every page. */
async function receipts(
  settlements: CostSettlementStore,
  scope: Scope,
): Promise<readonly string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await settlements.list(scope, { limit: 100, ...(cursor ? { cursor } : {}) });
    for (const r of page.items) out.push(`${r.receipt.settlementId}:${r.receipt.usdMicros}`);
    cursor = page.nextCursor;
  } while (cursor);
  return out.sort();
}

/** Hits as a sorted multiset of `where|needle`, for "untouched" comparisons. */
const multiset = (hits: readonly ScanHit[]) => hits.map((h) => `${h.where}|${h.needle}`).sort();

/**
 * Erasure leaves nothing: after `eraseSession` (or `eraseScope`) no stored value anywhere holds the
 * erased session's content or id, every other session is untouched (its hits are exactly what they
 * were), the tenant-day spend is unchanged, a second erasure changes nothing, and an unknown
 * session erases without error.
 */
export function erasureContract(name: string, factory: Factory<ErasureFixture>, t: TestApi): void {
  const test: ErasureTest = (title, body) =>
    t.it(title, async () => {
      const fx = await factory();
      try {
        await body(fx);
      } finally {
        await fx.close?.();
      }
    });
  const checks = erasureChecks(t);
  t.describe(`${name}: erasure leaves nothing`, () => {
    erasureAtRest(checks, test);
    erasureWhileRunning(checks, test);
    erasureInputsAndScope(checks, test);
  });
}

type ErasureTest = (title: string, body: (fx: ErasureFixture) => Promise<void>) => void;

const alpha = canariesOf("alpha");
const bravo = canariesOf("bravo");
const charlie = canariesOf("charlie");

/** What every test starts from: the hits of the sessions that must stay, the spend and the receipts. */
interface Baseline {
  readonly bravo: readonly string[];
  readonly charlie: readonly string[];
  readonly spend: readonly { readonly day: string; readonly usdMicros: number }[];
  readonly receipts: readonly string[];
}

type Checks = ReturnType<typeof erasureChecks>;

/** The seeding and the assertions the tests share. */
function erasureChecks(t: TestApi) {
  /** Recall's view of the scope: every episode and fact a search of the canaries' words returns (at the highest ceiling). */
  const recallable = async (
    fx: ErasureFixture,
    scope: Scope,
    c: Canaries,
  ): Promise<readonly string[]> => {
    const query = { text: `${c.patient} ${c.query}`, ceiling: "restricted" as const, limit: 50 };
    const episodes = fx.stores.episodes ? await fx.stores.episodes.search(scope, query) : [];
    const facts = fx.stores.profiles ? await fx.stores.profiles.search(scope, query) : [];
    return [
      ...episodes.map((h) => h.record.source.sessionId),
      ...facts.map((h) => h.record.source.sessionId),
    ];
  };

  /** Seeds alpha and bravo in scope A and charlie in scope B, and checks the scan sees every canary. */
  const seedAll = async (fx: ErasureFixture): Promise<Baseline> => {
    await fx.seed(A, alpha);
    await fx.seed(A, bravo);
    await fx.seed(B, charlie);
    for (const c of [alpha, bravo, charlie]) {
      const found = new Set((await fx.scan(needlesOf(c))).map((h) => h.needle));
      t.expect([...found].sort(), "the scan finds every planted canary before erasure").toEqual(
        [...needlesOf(c)].sort(),
      );
    }
    if (fx.stores.episodes || fx.stores.profiles)
      t.expect(
        await recallable(fx, A, alpha),
        "the seeded memory is recalled before erasure",
      ).toContain(alpha.sessionId);
    const spend = await fx.stores.spend.tenantDays(A.org);
    t.expect(spend.reduce((sum, d) => sum + d.usdMicros, 0) > 0, "the seeded turns spent").toBe(
      true,
    );
    return {
      bravo: multiset(await fx.scan(needlesOf(bravo))),
      charlie: multiset(await fx.scan(needlesOf(charlie))),
      spend,
      receipts: await receipts(fx.stores.settlements, A),
    };
  };

  const expectUntouched = async (fx: ErasureFixture, before: Baseline, keepBravo: boolean) => {
    if (keepBravo) {
      t.expect(
        multiset(await fx.scan(needlesOf(bravo))),
        "the other session of the scope is untouched",
      ).toEqual(before.bravo);
      t.expect(
        (await fx.stores.sessions.load(A, bravo.sessionId)).messages.length > 0,
        "the other session still loads",
      ).toBe(true);
      t.expect(
        await fx.stores.labels.get(A, bravo.sessionId),
        "the other session keeps its labels",
      ).toEqual({ mrn: bravo.label });
      if (fx.stores.episodes || fx.stores.profiles)
        t.expect(
          await recallable(fx, A, bravo),
          "the other session's memory is still recalled",
        ).toContain(bravo.sessionId);
    }
    t.expect(multiset(await fx.scan(needlesOf(charlie))), "the other scope is untouched").toEqual(
      before.charlie,
    );
    t.expect(await fx.stores.spend.tenantDays(A.org), "the tenant-day spend is unchanged").toEqual(
      before.spend,
    );
    t.expect(
      await receipts(fx.stores.settlements, A),
      "the scope's receipts keep their amounts (under pseudonymous session ids)",
    ).toEqual(before.receipts);
  };

  const expectGone = async (fx: ErasureFixture, c: Canaries) => {
    if (fx.stores.episodes || fx.stores.profiles) {
      t.expect(
        (await recallable(fx, A, c)).includes(c.sessionId),
        "nothing of the erased session is recallable",
      ).toBe(false);
      t.expect(
        await recallable(fx, B, charlie),
        "the other scope's memory is still recalled",
      ).toContain(charlie.sessionId);
    }
    t.expect(
      await fx.scan(needlesOf(c)),
      `no stored value holds ${c.sessionId}'s content or id`,
    ).toEqual([]);
    // The tombstones' marks are keyed by the deployment's trail key: the unkeyed digest of the id,
    // which anyone could compute from a guessed phone number, is stored nowhere.
    t.expect(
      await fx.scan([erasedSessionMark(A, c.sessionId)]),
      "no stored value holds an unkeyed digest of the erased id",
    ).toEqual([]);
    if (fx.scanFiles)
      t.expect(fx.scanFiles(needlesOf(c)), "no file byte holds an erased canary").toEqual([]);
    t.expect(await fx.stores.sessions.load(A, c.sessionId)).toEqual({
      messages: [],
      revision: 0,
      offset: 0,
      erased: true,
    });
    t.expect(await fx.stores.labels.get(A, c.sessionId)).toBeUndefined();
    if (fx.stores.usageInbox) {
      const kept = (await fx.stores.usageInbox.list(A, { limit: 100 })).items.map(
        (o) => o.sessionId,
      );
      t.expect(
        kept.filter((id) => isErasedMark(id)).length > 0,
        "the session's late usage stays, under its mark",
      ).toBe(true);
      t.expect(
        (await fx.stores.usageInbox.list(A, { sessionId: c.sessionId })).items,
        "no late usage under the erased id",
      ).toEqual([]);
    }
  };

  return { t, seedAll, expectUntouched, expectGone, recallable };
}

/** Erasure of a session no turn holds: once, twice, and of a session never seen. */
function erasureAtRest(
  { t, seedAll, expectUntouched, expectGone }: Checks,
  test: ErasureTest,
): void {
  test("eraseSession: no table, column or value holds the session's content or id; the other session and scope are untouched", async (fx) => {
    const before = await seedAll(fx);
    const report = await fx.eraseSession(A, alpha.sessionId);
    t.expect(report).toEqual({ fencedAdmissions: 0 });
    if (fx.scanFiles)
      t.expect(
        fx.scanFiles(needlesOf(bravo)).length > 0,
        "the byte scan finds what was not erased",
      ).toBe(true);
    await expectGone(fx, alpha);
    await expectUntouched(fx, before, true);
  });

  test("erasing twice changes nothing more, and a late turn of the erased session is refused and writes nothing", async (fx) => {
    const before = await seedAll(fx);
    await fx.eraseSession(A, alpha.sessionId);
    const afterFirst = multiset(await fx.scan([...needlesOf(bravo), ...needlesOf(charlie)]));
    t.expect(await fx.eraseSession(A, alpha.sessionId)).toEqual({ fencedAdmissions: 0 });
    t.expect(
      await fx.retry(A, alpha),
      "a retry under the old key and a new turn are both refused",
    ).toEqual(["unavailable", "unavailable"]);
    // A late memory extraction of the erased session is refused and writes nothing; another session of the scope still writes.
    const late = {
      scope: A,
      source: { sessionId: alpha.sessionId, turnId: "late", at: 1 },
      sensitivity: "internal" as const,
    };
    if (fx.stores.episodes) {
      await rejects(
        t,
        () =>
          (fx.stores.episodes as EpisodeStore).put({
            ...late,
            episodeId: "ep-late",
            summary: `${alpha.patient} came back.`,
          }),
        ErasedError,
        "erased",
      );
      t.expect(
        await fx.stores.episodes.put({
          ...late,
          episodeId: "ep-other",
          source: { ...late.source, sessionId: "+15550008008" },
          summary: "Another session.",
        }),
      ).toBe("stored");
    }
    if (fx.stores.profiles) {
      const fact = {
        ...late,
        factId: "f-late",
        key: "allergy.late",
        text: `${alpha.patient}: allergic.`,
        confidence: 1,
      };
      await rejects(t, () => (fx.stores.profiles as ProfileStore).put(fact), ErasedError, "erased");
    }
    await expectGone(fx, alpha);
    t.expect(multiset(await fx.scan([...needlesOf(bravo), ...needlesOf(charlie)]))).toEqual(
      afterFirst,
    );
    await expectUntouched(fx, before, true);
  });

  test("erasing a session never seen is no error and touches nothing", async (fx) => {
    const before = await seedAll(fx);
    const all = multiset(
      await fx.scan([...needlesOf(alpha), ...needlesOf(bravo), ...needlesOf(charlie)]),
    );
    t.expect(await fx.eraseSession(A, "+15559999999")).toEqual({ fencedAdmissions: 0 });
    t.expect(
      multiset(await fx.scan([...needlesOf(alpha), ...needlesOf(bravo), ...needlesOf(charlie)])),
    ).toEqual(all);
    await expectUntouched(fx, before, true);
  });
}

/** Erasure while turns run: the session's own (fenced, mid-tool and mid-call) and other sessions'. */
function erasureWhileRunning(
  { t, seedAll, expectUntouched, expectGone }: Checks,
  test: ErasureTest,
): void {
  test("a turn running at erasure is fenced: it appends nothing and stores no result; erasing again after it leaves nothing", async (fx) => {
    const before = await seedAll(fx);
    const { status, report } = await fx.eraseMidTurn(A, alpha);
    t.expect(report, "the erasure fenced the running turn's admission").toEqual({
      fencedAdmissions: 1,
    });
    t.expect(status, "the fenced turn ends uncertain").toBe("reconciliation_required");
    t.expect(
      await fx.stores.sessions.load(A, alpha.sessionId),
      "the fenced turn appended nothing",
    ).toEqual({ messages: [], revision: 0, offset: 0, erased: true });
    // What no store fences on the admission, the audit events the turn wrote after the erasure, is all that may be left.
    const left = (await fx.scan(needlesOf(alpha))).filter((h) => !/audit/.test(h.where));
    t.expect(left, "the fenced turn wrote nothing but audit events after the erasure").toEqual([]);
    t.expect(await fx.retry(A, alpha)).toEqual(["unavailable", "unavailable"]);
    // The fenced turn's first call was settled before the erasure: its money counts from now on.
    const after = {
      ...before,
      spend: await fx.stores.spend.tenantDays(A.org),
      receipts: await receipts(fx.stores.settlements, A),
    };
    t.expect(await fx.eraseSession(A, alpha.sessionId)).toEqual({ fencedAdmissions: 0 });
    await expectGone(fx, alpha);
    await expectUntouched(fx, after, true);
  });

  test("a model call in flight at erasure still settles: its cost is counted, and erasing again leaves nothing", async (fx) => {
    const before = await seedAll(fx);
    const total = (days: readonly { readonly usdMicros: number }[]) =>
      days.reduce((sum, d) => sum + d.usdMicros, 0);
    const { status, report } = await fx.eraseMidCall(A, alpha);
    t.expect(report, "the erasure fenced the running turn").toEqual({ fencedAdmissions: 1 });
    t.expect(status, "the fenced turn ends uncertain").toBe("reconciliation_required");
    const spent = await fx.stores.spend.tenantDays(A.org);
    t.expect(
      total(spent) > total(before.spend),
      "the call sent before the erasure settled and counts toward the tenant-day",
    ).toBe(true);
    const after = { ...before, spend: spent, receipts: await receipts(fx.stores.settlements, A) };
    t.expect(after.receipts.length, "its receipt is kept").toBe(before.receipts.length + 1);
    t.expect(await fx.eraseSession(A, alpha.sessionId)).toEqual({ fencedAdmissions: 0 });
    await expectGone(fx, alpha);
    await expectUntouched(fx, after, true);
  });

  test("erasing one session while eight other sessions' turns run: they all complete, and nothing of the erased one is left", async (fx) => {
    const before = await seedAll(fx);
    const others = Array.from({ length: 8 }, (_, i) => `+1555010${String(i).padStart(4, "0")}`);
    let report: ErasureReport | undefined;
    const statuses = await fx.turnsWhile(A, others, async () => {
      report = await fx.eraseSession(A, alpha.sessionId);
    });
    t.expect(statuses).toEqual(others.map(() => "completed"));
    t.expect(report).toEqual({ fencedAdmissions: 0 });
    for (const id of others)
      t.expect(
        (await fx.stores.sessions.load(A, id)).messages.length,
        "each concurrent turn persisted",
      ).toBe(2);
    await expectGone(fx, alpha);
    t.expect(multiset(await fx.scan(needlesOf(bravo)))).toEqual(before.bravo);
    t.expect(multiset(await fx.scan(needlesOf(charlie)))).toEqual(before.charlie);
  });
}

/** Bad input, and the whole scope. */
function erasureInputsAndScope(
  { t, seedAll, expectUntouched, expectGone }: Checks,
  test: ErasureTest,
): void {
  test("bad scopes and ids (the audit value too) are refused with typed errors, and nothing is erased", async (fx) => {
    const before = await seedAll(fx);
    const planted = multiset(await fx.scan(needlesOf(alpha)));
    await refusesBadScopes(
      t,
      (scope) => fx.eraseSession(scope, alpha.sessionId),
      (scope) => fx.eraseScope(scope),
    );
    await refusesBadIds(
      t,
      (id) => fx.eraseSession(A, id),
      (id) => fx.stores.erasure.eraseSession(A, alpha.sessionId, { auditSessionId: id }),
    );
    t.expect(multiset(await fx.scan(needlesOf(alpha)))).toEqual(planted);
    await expectUntouched(fx, before, true);
  });

  test("eraseScope: no value holds any session of the scope; the other scope is untouched; twice changes nothing", async (fx) => {
    const before = await seedAll(fx);
    t.expect(await fx.eraseScope(A)).toEqual({ fencedAdmissions: 0 });
    await expectGone(fx, alpha);
    await expectGone(fx, bravo);
    await expectUntouched(fx, before, false);
    t.expect(await fx.eraseScope(A)).toEqual({ fencedAdmissions: 0 });
    t.expect(await fx.scan([...needlesOf(alpha), ...needlesOf(bravo)])).toEqual([]);
    await expectUntouched(fx, before, false);
  });
}
