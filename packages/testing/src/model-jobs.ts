import {
  erasedSessionMark,
  MODEL_JOB_MAX_ITEMS,
  type ModelJob,
  ModelJobConflictError,
  type ModelJobItem,
  ModelJobStateError,
  type ModelJobStore,
  type SessionErasure,
  ValidationError,
} from "@alma-harness/core";
import { StoreFaults } from "./faults.js";
import {
  type Closable,
  contractSuite,
  deepFrozen,
  type Factory,
  type FixtureTest,
  refusesBadScopes,
  rejects,
  SCOPE_A,
  SCOPE_B,
  settleAll,
  T0,
  type TestApi,
  unsafe,
} from "./harness.js";

export interface ModelJobFixture extends Closable {
  readonly modelJobs: ModelJobStore;
  /** When the set has it: erasure is checked to keep an item under its session's mark. */
  readonly erasure?: SessionErasure;
}

/** The claim of item `n` of a job (as the execution's deferred face returned it). */
export function jobItemOf(n: number, over: Partial<ModelJobItem> = {}): ModelJobItem {
  return {
    customId: `item-${n}`,
    operationId: `job-1:item:${n}`,
    sessionId: "s1",
    rootKey: "root-job-1",
    turnId: "job-1",
    kind: "direct",
    choice: {
      clientId: "anthropic-batch",
      model: "claude-x",
      maxOutputTokens: 256,
      cache: false,
      serviceTier: "batch",
    },
    route: { tier: "fast", sensitivity: "confidential" },
    fenceToken: 1,
    worstMicros: 1_000 + n,
    claimedAt: T0,
    ...over,
  };
}

/** A claimed job of `count` items. */
export function jobOf(jobId = "job-1", count = 2, over: Partial<ModelJob> = {}): ModelJob {
  return {
    scope: SCOPE_A,
    jobId,
    transportId: "anthropic-batch",
    state: "claimed",
    items: Array.from({ length: count }, (_, i) =>
      jobItemOf(i + 1, { operationId: `${jobId}:item:${i + 1}` }),
    ),
    createdAt: T0,
    updatedAt: T0,
    ...over,
  };
}

/** The `ModelJobStore` contract: created once, advanced along its life by one winner, each item settled once, scoped listing, erasure by mark. */
export function modelJobStoreContract(
  name: string,
  factory: Factory<ModelJobFixture>,
  t: TestApi,
): void {
  contractSuite(t, `${name}: ModelJobStore contract`, factory, [
    createTests,
    lifeTests,
    itemTests,
    listingTests,
    inputTests,
    erasureTests,
  ]);
}

function createTests(t: TestApi, test: FixtureTest<ModelJobFixture>): void {
  test("create stores a claimed job once; get reads it frozen; the same again is exists; a different one conflicts", async (fx) => {
    const created = await fx.modelJobs.create(jobOf());
    t.expect(created).toEqual({ status: "created", job: jobOf() });
    const read = await fx.modelJobs.get(SCOPE_A, "job-1");
    t.expect(read).toEqual(jobOf());
    t.expect(deepFrozen(read)).toBe(true);
    t.expect(await fx.modelJobs.create(jobOf("job-1", 2, { updatedAt: T0 + 5 }))).toEqual({
      status: "exists",
      job: jobOf(),
    });
    await rejects(
      t,
      () => fx.modelJobs.create(jobOf("job-1", 3)),
      ModelJobConflictError,
      "model_job_conflict",
    );
    const other = jobOf();
    await rejects(
      t,
      () =>
        fx.modelJobs.create({
          ...other,
          items: [
            other.items[0] as ModelJobItem,
            { ...(other.items[1] as ModelJobItem), worstMicros: 7 },
          ],
        }),
      ModelJobConflictError,
    );
    t.expect(await fx.modelJobs.get(SCOPE_B, "job-1")).toBeUndefined();
  });

  test("executed, then reported a failure: the caller's retry is exists, never a second job", async (fx) => {
    const faults = new StoreFaults({ seed: 1, rate: 1, afterShare: 1 });
    const faulty = faults.wrap("modelJobs", fx.modelJobs);
    await rejects(t, () => faulty.create(jobOf()), Error, "store_unavailable");
    t.expect(faults.counts().after).toBe(1);
    t.expect((await fx.modelJobs.create(jobOf())).status).toBe("exists");
    const advanced = new StoreFaults({ seed: 1, rate: 1, afterShare: 1 }).wrap(
      "modelJobs",
      fx.modelJobs,
    );
    await rejects(
      t,
      () => advanced.advance(SCOPE_A, "job-1", { from: "claimed", to: "submitting", at: T0 + 1 }),
      Error,
      "store_unavailable",
    );
    // The change landed: the same change again is refused by state, and the state says so.
    await rejects(
      t,
      () =>
        fx.modelJobs.advance(SCOPE_A, "job-1", { from: "claimed", to: "submitting", at: T0 + 1 }),
      ModelJobStateError,
      "model_job_state",
    );
    t.expect((await fx.modelJobs.get(SCOPE_A, "job-1"))?.state).toBe("submitting");
  });
}

function lifeTests(t: TestApi, test: FixtureTest<ModelJobFixture>): void {
  test("advance follows the life: claimed → submitting (its time kept) → submitted (with the batch id) → collected once every item settled", async (fx) => {
    await fx.modelJobs.create(jobOf());
    const submitting = await fx.modelJobs.advance(SCOPE_A, "job-1", {
      from: "claimed",
      to: "submitting",
      at: T0 + 1,
    });
    t.expect(submitting).toMatchObject({
      state: "submitting",
      submittingAt: T0 + 1,
      updatedAt: T0 + 1,
    });
    await rejects(
      t,
      () =>
        fx.modelJobs.advance(SCOPE_A, "job-1", { from: "submitting", to: "submitted", at: T0 + 2 }),
      ValidationError,
    );
    const submitted = await fx.modelJobs.advance(SCOPE_A, "job-1", {
      from: "submitting",
      to: "submitted",
      at: T0 + 2,
      batchId: "msgbatch_01",
    });
    t.expect(submitted).toMatchObject({
      state: "submitted",
      batchId: "msgbatch_01",
      submittingAt: T0 + 1,
    });
    await rejects(
      t,
      () =>
        fx.modelJobs.advance(SCOPE_A, "job-1", { from: "submitted", to: "collected", at: T0 + 3 }),
      ModelJobStateError,
    );
    await fx.modelJobs.settleItem(SCOPE_A, "job-1", "item-1", {
      settlementId: "job-1:item:1:settlement",
      outcome: "succeeded",
    });
    await fx.modelJobs.settleItem(SCOPE_A, "job-1", "item-2", {
      settlementId: "job-1:item:2:settlement",
      outcome: "errored",
    });
    const collected = await fx.modelJobs.advance(SCOPE_A, "job-1", {
      from: "submitted",
      to: "collected",
      at: T0 + 3,
    });
    t.expect(collected.state).toBe("collected");
    t.expect(await fx.modelJobs.get(SCOPE_A, "job-1")).toEqual(collected);
  });

  test("a change off the life is refused before any I/O; a job in another state refuses the change", async (fx) => {
    await fx.modelJobs.create(jobOf());
    for (const [from, to] of [
      ["claimed", "submitted"],
      ["claimed", "collected"],
      ["submitted", "submitting"],
      ["collected", "claimed"],
      ["cancelled", "submitting"],
    ] as const) {
      await rejects(
        t,
        () => fx.modelJobs.advance(SCOPE_A, "job-1", { from, to, at: T0 + 1 }),
        ModelJobStateError,
      );
    }
    await rejects(
      t,
      () =>
        fx.modelJobs.advance(SCOPE_A, "job-1", {
          from: "submitting",
          to: "submitted",
          at: T0 + 1,
          batchId: "b",
        }),
      ModelJobStateError,
    );
    await rejects(
      t,
      () => fx.modelJobs.advance(SCOPE_A, "nope", { from: "claimed", to: "cancelled", at: T0 + 1 }),
      ModelJobStateError,
    );
    t.expect(
      (
        await fx.modelJobs.advance(SCOPE_A, "job-1", {
          from: "claimed",
          to: "cancelled",
          at: T0 + 1,
        })
      ).state,
    ).toBe("cancelled");
  });

  test("of concurrent advances from one state exactly one wins, the others are refused by state", async (fx) => {
    await fx.modelJobs.create(jobOf());
    const { ok, failed } = await settleAll(
      Array.from({ length: 6 }, (_, i) =>
        fx.modelJobs.advance(SCOPE_A, "job-1", { from: "claimed", to: "submitting", at: T0 + i }),
      ),
    );
    t.expect(ok).toHaveLength(1);
    t.expect(failed).toHaveLength(5);
    for (const error of failed) t.expect(error).toBeInstanceOf(ModelJobStateError);
  });
}

function itemTests(t: TestApi, test: FixtureTest<ModelJobFixture>): void {
  test("an item settles once: the same again is replayed, a different one conflicts; two collectors racing record one", async (fx) => {
    await fx.modelJobs.create(jobOf());
    const s = { settlementId: "job-1:item:1:settlement", outcome: "succeeded" } as const;
    const { ok, failed } = await settleAll(
      Array.from({ length: 6 }, () => fx.modelJobs.settleItem(SCOPE_A, "job-1", "item-1", s)),
    );
    t.expect(failed).toEqual([]);
    t.expect(ok.filter((r) => r.status === "applied")).toHaveLength(1);
    t.expect(ok.every((r) => r.job.items[0]?.settlementId === s.settlementId)).toBe(true);
    await rejects(
      t,
      () => fx.modelJobs.settleItem(SCOPE_A, "job-1", "item-1", { ...s, outcome: "errored" }),
      ModelJobConflictError,
    );
    await rejects(
      t,
      () => fx.modelJobs.settleItem(SCOPE_A, "job-1", "item-1", { ...s, settlementId: "other" }),
      ModelJobConflictError,
    );
    await rejects(
      t,
      () => fx.modelJobs.settleItem(SCOPE_A, "job-1", "item-9", s),
      ModelJobConflictError,
    );
    t.expect((await fx.modelJobs.get(SCOPE_A, "job-1"))?.items.map((i) => i.outcome)).toEqual([
      "succeeded",
      undefined,
    ]);
  });

  test("an item settlement executed, then reported a failure: the retry is replayed", async (fx) => {
    await fx.modelJobs.create(jobOf());
    const faulty = new StoreFaults({ seed: 2, rate: 1, afterShare: 1 }).wrap(
      "modelJobs",
      fx.modelJobs,
    );
    const s = { settlementId: "job-1:item:2:settlement", outcome: "expired" } as const;
    await rejects(
      t,
      () => faulty.settleItem(SCOPE_A, "job-1", "item-2", s),
      Error,
      "store_unavailable",
    );
    t.expect((await fx.modelJobs.settleItem(SCOPE_A, "job-1", "item-2", s)).status).toBe(
      "replayed",
    );
  });
}

function listingTests(t: TestApi, test: FixtureTest<ModelJobFixture>): void {
  test("list is one scope's, ascending by (createdAt, jobId), filtered by state, a cursor at a time", async (fx) => {
    for (const [i, id] of ["job-c", "job-a", "job-b"].entries())
      await fx.modelJobs.create(
        jobOf(id, 1, { createdAt: T0 + (i === 0 ? 5 : 0), updatedAt: T0 + 5 }),
      );
    await fx.modelJobs.create(jobOf("job-a", 1, { scope: SCOPE_B }));
    await fx.modelJobs.advance(SCOPE_A, "job-b", { from: "claimed", to: "submitting", at: T0 + 6 });
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await fx.modelJobs.list(SCOPE_A, { limit: 1, ...(cursor ? { cursor } : {}) });
      ids.push(...page.items.map((j) => j.jobId));
      cursor = page.nextCursor;
    } while (cursor);
    t.expect(ids).toEqual(["job-a", "job-b", "job-c"]);
    t.expect(
      (await fx.modelJobs.list(SCOPE_A, { state: "submitting" })).items.map((j) => j.jobId),
    ).toEqual(["job-b"]);
    t.expect((await fx.modelJobs.list(SCOPE_B)).items).toHaveLength(1);
    await rejects(
      t,
      () => fx.modelJobs.list(SCOPE_A, unsafe({ state: "running" })),
      ValidationError,
    );
    await rejects(t, () => fx.modelJobs.list(SCOPE_A, { cursor: "forged" }), ValidationError);
  });
}

function inputTests(t: TestApi, test: FixtureTest<ModelJobFixture>): void {
  test(`a job of ${MODEL_JOB_MAX_ITEMS} items is kept, one more refused; custom ids at 64 characters kept, at 65 refused`, async (fx) => {
    const full = await fx.modelJobs.create(jobOf("job-full", MODEL_JOB_MAX_ITEMS));
    t.expect(full.job.items).toHaveLength(MODEL_JOB_MAX_ITEMS);
    t.expect((await fx.modelJobs.get(SCOPE_A, "job-full"))?.items).toHaveLength(
      MODEL_JOB_MAX_ITEMS,
    );
    await rejects(
      t,
      () => fx.modelJobs.create(jobOf("job-over", MODEL_JOB_MAX_ITEMS + 1)),
      ValidationError,
    );
    await rejects(t, () => fx.modelJobs.create(jobOf("job-none", 0)), ValidationError);
    const at = jobOf("job-64", 1);
    await fx.modelJobs.create({
      ...at,
      items: [{ ...(at.items[0] as ModelJobItem), customId: "c".repeat(64) }],
    });
    await rejects(
      t,
      () =>
        fx.modelJobs.create({
          ...at,
          jobId: "job-65",
          items: [{ ...(at.items[0] as ModelJobItem), customId: "c".repeat(65) }],
        }),
      ValidationError,
    );
  });

  test("hostile and invalid input is refused typed, before any I/O (even on a closed store)", async (fx, closeNow) => {
    await closeNow();
    await refusesBadScopes(
      t,
      (scope) => fx.modelJobs.create(jobOf("job-1", 1, { scope })),
      (scope) => fx.modelJobs.get(scope, "job-1"),
      (scope) => fx.modelJobs.list(scope),
    );
    let read = false;
    const getter = Object.defineProperty({ ...jobOf() }, "jobId", {
      enumerable: true,
      get: () => {
        read = true;
        return "job-1";
      },
    });
    const item = jobItemOf(1);
    const bad: unknown[] = [
      null,
      [],
      getter,
      { ...jobOf(), prompt: "the patient said" },
      { ...jobOf(), state: "submitted" },
      { ...jobOf(), batchId: "b-1" },
      { ...jobOf(), jobId: "has space" },
      { ...jobOf(), items: [item, item] },
      { ...jobOf(), items: [{ ...item, text: "hello" }] },
      { ...jobOf(), items: [{ ...item, kind: "tool" }] },
      { ...jobOf(), items: [{ ...item, route: { tier: "fast", sensitivity: "secret" } }] },
      { ...jobOf(), items: [{ ...item, choice: { ...item.choice, serviceTier: "gold" } }] },
      { ...jobOf(), items: [{ ...item, worstMicros: -1 }] },
      { ...jobOf(), items: [{ ...item, settlementId: "s" }] },
    ];
    for (const value of bad) await rejects(t, () => fx.modelJobs.create(unsafe(value)), Error);
    t.expect(read, "no getter ran").toBe(false);
    await rejects(
      t,
      () =>
        fx.modelJobs.settleItem(
          SCOPE_A,
          "job-1",
          "item-1",
          unsafe({ settlementId: "s", outcome: "fine" }),
        ),
      ValidationError,
    );
    await rejects(
      t,
      () =>
        fx.modelJobs.advance(
          SCOPE_A,
          "job-1",
          unsafe({ from: "claimed", to: "submitting", at: -1 }),
        ),
      ValidationError,
    );
  });
}

function erasureTests(t: TestApi, test: FixtureTest<ModelJobFixture>): void {
  test("erasing a session keeps its items under the session's mark (the rest untouched); a replayed create is still exists", async (fx) => {
    if (!fx.erasure) return;
    const job = jobOf();
    const mixed: ModelJob = {
      ...job,
      items: [job.items[0] as ModelJobItem, { ...(job.items[1] as ModelJobItem), sessionId: "s2" }],
    };
    await fx.modelJobs.create(mixed);
    await fx.modelJobs.create(jobOf("job-1", 1, { scope: SCOPE_B }));
    await fx.erasure.eraseSession(SCOPE_A, "s1", { auditSessionId: "s1-pseudonym" });
    const mark = erasedSessionMark(SCOPE_A, "s1");
    t.expect((await fx.modelJobs.get(SCOPE_A, "job-1"))?.items.map((i) => i.sessionId)).toEqual([
      mark,
      "s2",
    ]);
    t.expect((await fx.modelJobs.create(mixed)).status).toBe("exists");
    await fx.erasure.eraseScope(SCOPE_A);
    t.expect((await fx.modelJobs.get(SCOPE_A, "job-1"))?.items.map((i) => i.sessionId)).toEqual([
      mark,
      erasedSessionMark(SCOPE_A, "s2"),
    ]);
    t.expect((await fx.modelJobs.get(SCOPE_B, "job-1"))?.items.map((i) => i.sessionId)).toEqual([
      "s1",
    ]);
  });
}
