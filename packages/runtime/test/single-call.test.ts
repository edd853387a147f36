import {
  type AuditRecord,
  type ModelRequest,
  type Scope,
  ValidationError,
  worstCaseMicros,
} from "@alma-harness/core";
import {
  FakeModelClient,
  scriptedHang,
  scriptedText,
  scriptedToolCall,
} from "@alma-harness/loop/testing";
import {
  createGovernedStepRunner,
  StepCallConflictError,
  StepCallErasedError,
  StepCallInProgressError,
  stepOperationId,
} from "@alma-harness/single-call";
import { tapStore, tapStores } from "@alma-harness/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PRICES,
  pseudonym,
  STEP_TRAIL_KEY,
  stepRunner,
  TRIAGE_SCHEMA,
  triage,
} from "./single-call-kit.js";
import { KINDS, type OpenedStores, openStores } from "./store-kit.js";

const ANSWER = '{"category":"booking","urgency":2}';
let orgs = 0;
/** A fresh tenant per test: its spend, trails and keys are its own. */
const freshScope = (): Scope => ({ org: `clinic-${process.pid}-${++orgs}`, uid: "desk" });
const noDurable = async (opened: OpenedStores, scope: Scope, key: string) => {
  const op = stepOperationId(scope, key);
  expect(await opened.stores.rootResults.get(scope, op, Date.now())).toBeUndefined();
  expect(await opened.stores.journal.get(scope, `${op}:a1:c1`)).toBeUndefined();
  const trails = (await opened.stores.audit.query(scope, { limit: 500 })).items;
  expect(trails.filter((e) => e.turnId === op)).toEqual([]);
};

describe.each(KINDS)("governed step runner on %s", (kind, enabled) => {
  let opened: OpenedStores;
  beforeAll(async () => {
    if (enabled) opened = await openStores(kind, "single");
  });
  afterAll(async () => opened?.close());

  it.skipIf(!enabled)(
    "completes with the validated object and its receipt; no session append; routing and access carry the ids",
    async () => {
      const scope = freshScope();
      const client = new FakeModelClient([scriptedText(ANSWER)]);
      const result = await stepRunner(opened.stores, client).run(triage(scope, "k1"));
      expect(result).toMatchObject({
        status: "completed",
        object: { category: "booking", urgency: 2 },
        replayed: false,
        stopReason: "end_turn",
      });
      if (result.status !== "completed") throw new Error("unreachable");
      expect(result.receipt).toMatchObject({ kind: "single", usdMicros: 105, model: "demo" });
      // The schema went to the adapter as the native output control.
      expect(client.requests[0]?.output).toEqual({ name: "triage", schema: TRIAGE_SCHEMA });
      expect((await opened.stores.sessions.load(scope, "s1")).messages).toEqual([]);
      const op = result.operationId;
      const items = (await opened.stores.audit.query(scope, { limit: 500 })).items;
      const routing = items.filter(
        (e): e is Extract<AuditRecord, { trail: "routing" }> => e.trail === "routing",
      );
      const access = items.filter(
        (e): e is Extract<AuditRecord, { trail: "access" }> => e.trail === "access",
      );
      expect(routing).toHaveLength(2);
      expect(access).toHaveLength(1);
      for (const e of [...routing, ...access]) {
        expect(e).toMatchObject({
          operationId: op,
          attemptId: `${op}:a1`,
          callId: `${op}:a1:c1`,
          sessionId: pseudonym(scope),
        });
      }
      expect(access[0]).toMatchObject({
        tool: "model",
        action: "egress",
        resource: "provider:fake:messages:1",
      });
      expect(routing[0]?.kind).toBe("single");
      expect(STEP_TRAIL_KEY).toBeTruthy();
    },
  );

  it.skipIf(!enabled)(
    "replays the stored result under the same key and never dispatches again; changed content conflicts",
    async () => {
      const scope = freshScope();
      const client = new FakeModelClient([scriptedText(ANSWER)]);
      const runner = stepRunner(opened.stores, client);
      const first = await runner.run(triage(scope, "k1"));
      const again = await runner.run(triage(scope, "k1"));
      expect(again).toEqual({ ...first, replayed: true });
      expect(client.calls).toBe(1);
      await expect(
        runner.run(triage(scope, "k1", { prompt: "Classify: my invoice is wrong." })),
      ).rejects.toBeInstanceOf(StepCallConflictError);
      await expect(
        runner.run(triage(scope, "k1", { toolChoice: { type: "auto" } })),
      ).rejects.toBeInstanceOf(StepCallConflictError);
      // Another configuration revision is other content too.
      await expect(
        stepRunner(opened.stores, client, { configRevision: "rev-2" }).run(triage(scope, "k1")),
      ).rejects.toBeInstanceOf(StepCallConflictError);
      expect(client.calls).toBe(1);
      expect(await runner.read(scope, "k1")).toEqual({ ...first, replayed: true });
    },
  );

  it.skipIf(!enabled)(
    "concurrent callers with one key: one dispatch; the others are told it is in progress, then replay",
    async () => {
      const scope = freshScope();
      const client = new FakeModelClient([scriptedText(ANSWER)]);
      const runner = stepRunner(opened.stores, client);
      const settled = await Promise.allSettled(
        Array.from({ length: 6 }, () => runner.run(triage(scope, "k1"))),
      );
      expect(client.calls).toBe(1);
      const completed = settled.filter(
        (s) => s.status === "fulfilled" && s.value.status === "completed",
      );
      expect(completed.length).toBeGreaterThanOrEqual(1);
      for (const s of settled) {
        if (s.status === "rejected") expect(s.reason).toBeInstanceOf(StepCallInProgressError);
        else expect(s.value.status).toBe("completed");
      }
      expect((await runner.run(triage(scope, "k1"))).status).toBe("completed");
      expect(client.calls).toBe(1);
    },
  );

  it.skipIf(!enabled)(
    "an answer that does not validate is invalid, with its receipt (it was paid), and replays as such",
    async () => {
      const scope = freshScope();
      const client = new FakeModelClient([
        scriptedText('{"category":"surgery","urgency":2}'),
        scriptedText("Sure! It is a booking."),
      ]);
      const runner = stepRunner(opened.stores, client);
      const bad = await runner.run(triage(scope, "k1"));
      expect(bad).toMatchObject({
        status: "invalid",
        reason: "schema",
        problem: "/category must be equal to one of the allowed values",
        receipt: { usdMicros: 105 },
      });
      expect(await opened.stores.spend.tenantDays(scope.org)).toEqual([
        expect.objectContaining({ usdMicros: 105 }),
      ]);
      expect(await runner.run(triage(scope, "k1"))).toEqual({ ...bad, replayed: true });
      expect(await runner.run(triage(scope, "k2"))).toMatchObject({
        status: "invalid",
        reason: "not_json",
      });
      expect(client.calls).toBe(2);
    },
  );

  it.skipIf(!enabled)(
    "a forced tool's arguments are the answer (tool mode), validated the same way",
    async () => {
      const scope = freshScope();
      const tool = {
        name: "capture",
        description: "Record the triage.",
        inputSchema: TRIAGE_SCHEMA,
      };
      const client = new FakeModelClient([
        scriptedToolCall({ name: "capture", input: { category: "clinical", urgency: 4 } }),
      ]);
      const result = await stepRunner(opened.stores, client).run(
        triage(scope, "k1", { tools: [tool], toolChoice: { type: "tool", name: "capture" } }),
      );
      expect(result).toMatchObject({
        status: "completed",
        object: { category: "clinical", urgency: 4 },
        stopReason: "tool_use",
      });
      expect(client.requests[0]?.toolChoice).toEqual({ type: "tool", name: "capture" });
    },
  );

  it.skipIf(!enabled)(
    "a toolChoice naming no advertised tool is a typed error before any I/O",
    async () => {
      const scope = freshScope();
      const client = new FakeModelClient([]);
      const runner = stepRunner(opened.stores, client);
      const tool = {
        name: "capture",
        description: "Record the triage.",
        inputSchema: TRIAGE_SCHEMA,
      };
      await expect(
        runner.run(triage(scope, "k1", { toolChoice: { type: "tool", name: "capture" } })),
      ).rejects.toMatchObject({ path: "toolChoice.name", rule: "missing" });
      await expect(
        runner.run(
          triage(scope, "k2", { tools: [tool], toolChoice: { type: "tool", name: "other" } }),
        ),
      ).rejects.toBeInstanceOf(ValidationError);
      await expect(
        runner.run(triage(scope, "k3", { toolChoice: { type: "required" } })),
      ).rejects.toMatchObject({ rule: "no_tools" });
      for (const key of ["k1", "k2", "k3"]) await noDurable(opened, scope, key);
      expect(client.calls).toBe(0);
    },
  );

  it.skipIf(!enabled)("temperature 2 is sent; 2.01 is a typed error before any I/O", async () => {
    const scope = freshScope();
    const client = new FakeModelClient([scriptedText(ANSWER)]);
    const runner = stepRunner(opened.stores, client);
    expect((await runner.run(triage(scope, "k1", { temperature: 2 }))).status).toBe("completed");
    expect(client.requests[0]?.temperature).toBe(2);
    await expect(runner.run(triage(scope, "k2", { temperature: 2.01 }))).rejects.toMatchObject({
      path: "temperature",
      rule: "range",
    });
    await expect(runner.run(triage(scope, "k3", { temperature: -0.01 }))).rejects.toBeInstanceOf(
      ValidationError,
    );
    await noDurable(opened, scope, "k2");
    expect(client.calls).toBe(1);
  });

  it.skipIf(!enabled)(
    "a block cap at the call's worst case dispatches; one micro-dollar under it is refused at zero cost",
    async () => {
      // The worst case of exactly this request, measured by core's rule on what the adapter saw.
      const probe = new FakeModelClient([scriptedText(ANSWER)]);
      await stepRunner(opened.stores, probe).run(triage(freshScope(), "probe"));
      const seen = probe.requests[0] as ModelRequest;
      const worst = worstCaseMicros(
        PRICES,
        { clientId: "fake", model: "demo", maxOutputTokens: 512, cache: false },
        seen,
      ) as number;
      expect(worst).toBeGreaterThan(0);
      for (const cap of ["perTurnUsd", "perTenantDayUsd"] as const) {
        const asCap = (micros: number) => ({
          [cap]:
            cap === "perTurnUsd"
              ? micros / 1e6
              : { usd: micros / 1e6, onExceeded: "block" as const },
        });
        const atLimit = new FakeModelClient([scriptedText(ANSWER)]);
        expect(
          (
            await stepRunner(opened.stores, atLimit, { caps: asCap(worst) }).run(
              triage(freshScope(), "k1"),
            )
          ).status,
        ).toBe("completed");
        const over = new FakeModelClient([scriptedText(ANSWER)]);
        const scope = freshScope();
        const refused = await stepRunner(opened.stores, over, { caps: asCap(worst - 1) }).run(
          triage(scope, "k1"),
        );
        expect(refused).toMatchObject({ status: "refused", reason: "cap", cap });
        expect(over.calls).toBe(0);
        expect(await opened.stores.spend.tenantDays(scope.org)).toEqual([]);
        const op = stepOperationId(scope, "k1");
        expect(await opened.stores.journal.get(scope, `${op}:a1:c1`)).toBeUndefined();
        const cost = (await opened.stores.audit.query(scope, { trail: "cost" })).items;
        expect(cost).toEqual([
          expect.objectContaining({ usdMicros: 0, refused: { reason: "cap", detail: cap } }),
        ]);
        // The refusal is the key's answer: replayed, never dispatched later.
        expect(
          await stepRunner(opened.stores, over, { caps: asCap(worst - 1) }).run(
            triage(scope, "k1"),
          ),
        ).toEqual({ ...refused, replayed: true });
      }
    },
  );

  it.skipIf(!enabled)(
    "an unpriced route is refused at zero cost; an unroutable intent is not admitted with nothing durable",
    async () => {
      const scope = freshScope();
      const client = new FakeModelClient([]);
      const base = {
        stores: opened.stores,
        clients: [client],
        prices: PRICES,
        policyVersion: "policy-1",
        configRevision: "rev-1",
        trailKey: STEP_TRAIL_KEY,
        resultRetentionMs: 86_400_000,
      };
      const offTable = createGovernedStepRunner({
        ...base,
        policy: {
          resolve: () => ({
            clientId: client.id,
            model: "unknown-model",
            maxOutputTokens: 512,
            cache: false,
          }),
        },
      });
      expect(await offTable.run(triage(scope, "k1"))).toMatchObject({
        status: "refused",
        reason: "unpriced",
        missing: "model",
      });
      const cost = (await opened.stores.audit.query(scope, { trail: "cost" })).items;
      expect(cost).toEqual([expect.objectContaining({ usdMicros: 0 })]);
      const noRoute = createGovernedStepRunner({
        ...base,
        policy: {
          resolve: () => {
            throw new Error("no route for restricted data");
          },
        },
      });
      expect(await noRoute.run(triage(scope, "k2"))).toMatchObject({
        status: "refused",
        reason: "not_admitted",
        replayed: false,
      });
      const op = stepOperationId(scope, "k2");
      expect(await opened.stores.rootResults.get(scope, op, Date.now())).toBeUndefined();
      expect(client.calls).toBe(0);
    },
  );

  it.skipIf(!enabled)(
    "erasing the session erases the stored result: the key is never answered or sent again",
    async () => {
      const scope = freshScope();
      const client = new FakeModelClient([scriptedText(ANSWER), scriptedText(ANSWER)]);
      const runner = stepRunner(opened.stores, client);
      expect((await runner.run(triage(scope, "k1"))).status).toBe("completed");
      await opened.stores.erasure.eraseSession(scope, "s1", { auditSessionId: pseudonym(scope) });
      await expect(runner.run(triage(scope, "k1"))).rejects.toBeInstanceOf(StepCallErasedError);
      expect(await runner.read(scope, "k1")).toBeUndefined();
      const record = await opened.stores.rootResults.get(
        scope,
        stepOperationId(scope, "k1"),
        Date.now(),
      );
      expect(record?.envelope).toBeUndefined();
      expect(client.calls).toBe(1);
    },
  );

  it.skipIf(!enabled)(
    "a cancelled call in flight is reconciliation_required, and its key never sends again",
    async () => {
      const scope = freshScope();
      const client = new FakeModelClient([
        scriptedHang(scriptedText(ANSWER), 0),
        scriptedText(ANSWER),
      ]);
      const runner = stepRunner(opened.stores, client);
      const controller = new AbortController();
      const running = runner.run(triage(scope, "k1", { signal: controller.signal }));
      while (client.calls === 0) await new Promise((resolve) => setImmediate(resolve));
      controller.abort();
      expect(await running).toMatchObject({
        status: "reconciliation_required",
        cause: "cancelled",
        replayed: false,
      });
      expect(await runner.run(triage(scope, "k1"))).toMatchObject({
        status: "reconciliation_required",
        replayed: true,
      });
      expect(client.calls).toBe(1);
    },
  );

  it.skipIf(!enabled)(
    "a second caller while the first stores its result (journal completed, result not yet stored) is told it is in progress",
    async () => {
      const scope = freshScope();
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let storing: () => void = () => undefined;
      const atPut = new Promise<void>((resolve) => {
        storing = resolve;
      });
      const gated = tapStores(opened.stores, (name, store) =>
        tapStore(store, async (method, call) => {
          if (name === "rootResults" && method === "put") {
            storing();
            await gate;
          }
          return call();
        }),
      );
      const client = new FakeModelClient([scriptedText(ANSWER)]);
      const first = stepRunner(gated, client).run(triage(scope, "k1"));
      await atPut;
      await expect(
        stepRunner(opened.stores, client).run(triage(scope, "k1")),
      ).rejects.toBeInstanceOf(StepCallInProgressError);
      release();
      expect((await first).status).toBe("completed");
      expect((await stepRunner(opened.stores, client).run(triage(scope, "k1"))).replayed).toBe(
        true,
      );
      expect(client.calls).toBe(1);
    },
  );

  it.skipIf(!enabled)(
    "a fenced tenant makes no new call (typed, nothing durable); a stored key still replays; lifted, it calls again",
    async () => {
      const scope = freshScope();
      const client = new FakeModelClient([scriptedText(ANSWER), scriptedText(ANSWER)]);
      const runner = stepRunner(opened.stores, client);
      const stored = await runner.run(triage(scope, "k1"));
      await opened.stores.admissions.fenceScope({
        target: { org: scope.org },
        reason: "suspended",
        now: Date.now(),
      });
      await expect(runner.run(triage(scope, "k2"))).rejects.toMatchObject({ code: "scope_fenced" });
      await noDurable(opened, scope, "k2");
      expect(await runner.run(triage(scope, "k1"))).toEqual({ ...stored, replayed: true });
      expect(client.calls).toBe(1);
      await opened.stores.admissions.liftScopeFence({ org: scope.org });
      expect((await runner.run(triage(scope, "k2"))).status).toBe("completed");
      expect(client.calls).toBe(2);
    },
  );
});
