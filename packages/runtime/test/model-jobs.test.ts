import { MixedTenantJobError } from "@alma-harness/batch";
import { succeeded } from "@alma-harness/batch/testing";
import { ValidationError } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import {
  DAY,
  dayJob,
  jobClient,
  jobStoresPerTest,
  PRICES,
  SCOPE,
  UNPRICED_BATCH,
} from "./model-jobs-kit.js";
import { skipNote } from "./open.js";
import { KINDS } from "./store-kit.js";

const open = jobStoresPerTest();

/** 1,000 input tokens and 100 output tokens at the batch row ($1.5 / $7.5 per million): 2,250 micro-dollars. */
const ANSWER = (customId: string) => succeeded(customId, `Summary of ${customId}.`, 1_000, 100);
const BATCH_PRICE = 2_250;

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(`model jobs on ${kind}${skipNote(enabled)}`, () => {
    it("submits once: every item claimed and dispatching before the one submission; a retry of the job id never submits again", async () => {
      const { stores } = await open(kind);
      const { client, transport, audit } = jobClient(stores);
      const first = await client.submit(dayJob());
      expect(first).toMatchObject({
        status: "submitted",
        replayed: false,
        reconciled: false,
        job: { state: "submitted", batchId: "batch_1" },
      });
      expect(transport.submissions).toHaveLength(1);
      expect(
        transport.submissions[0]?.items.map((i) => [
          i.customId,
          i.request.serviceTier,
          i.request.sensitivity,
        ]),
      ).toEqual([
        ["day-1", "batch", "confidential"],
        ["day-2", "batch", "confidential"],
      ]);
      for (const n of [1, 2])
        expect((await stores.journal.get(SCOPE, `night-1:day-${n}`))?.state).toBe("dispatching");
      expect(
        audit.trail("routing").map((e) => (e as { requestedTier?: string }).requestedTier),
      ).toEqual(["batch", "batch"]);
      const again = await client.submit(dayJob());
      expect(again).toMatchObject({ status: "submitted", replayed: true });
      expect(transport.submissions).toHaveLength(1);
    });

    it("collect settles each item once through its own receipt at the batch tier's price; collecting again replays", async () => {
      const { stores } = await open(kind);
      const { client, transport, audit } = jobClient(stores);
      await client.submit(dayJob());
      expect(await client.collect(SCOPE, "night-1")).toMatchObject({
        status: "pending",
        batch: "in_progress",
      });
      expect((await stores.settlements.list(SCOPE)).items).toEqual([]);
      transport.end("batch_1", (item) => ANSWER(item.customId));
      const collected = await client.collect(SCOPE, "night-1");
      if (collected.status !== "collected") throw new Error(collected.status);
      expect(collected.job.state).toBe("collected");
      expect(
        collected.items.map((i) => [
          i.customId,
          i.outcome,
          i.applied,
          i.receipt.serviceTier,
          i.receipt.usdMicros,
          i.answer?.text,
        ]),
      ).toEqual([
        ["day-1", "succeeded", true, "batch", BATCH_PRICE, "Summary of day-1."],
        ["day-2", "succeeded", true, "batch", BATCH_PRICE, "Summary of day-2."],
      ]);
      expect(collected.items.map((i) => i.receipt.settlementId)).toEqual([
        "night-1:day-1:settlement",
        "night-1:day-2:settlement",
      ]);
      expect((await stores.spend.peek(SCOPE, "patient-1", DAY)).tenantDayMicros).toBe(
        2 * BATCH_PRICE,
      );
      for (const n of [1, 2])
        expect((await stores.journal.get(SCOPE, `night-1:day-${n}`))?.state).toBe("completed");
      expect(audit.trail("cost")).toHaveLength(2);
      const replay = await client.collect(SCOPE, "night-1");
      if (replay.status !== "collected") throw new Error(replay.status);
      expect(replay.items.map((i) => i.applied)).toEqual([false, false]);
      expect(replay.items.map((i) => i.receipt)).toEqual(collected.items.map((i) => i.receipt));
      expect((await stores.spend.peek(SCOPE, "patient-1", DAY)).tenantDayMicros).toBe(
        2 * BATCH_PRICE,
      );
      expect(audit.trail("cost")).toHaveLength(2);
    });

    it("items the provider did not answer settle at zero (errored, expired, canceled), never as a rejection; a failed batch ran nothing", async () => {
      const { stores } = await open(kind);
      const { client, transport } = jobClient(stores);
      await client.submit(dayJob("night-1", 3));
      transport.end("batch_1", (item) =>
        item.customId === "day-1"
          ? ANSWER(item.customId)
          : {
              customId: item.customId,
              type: item.customId === "day-2" ? "errored" : "expired",
              failure: "rate_limited",
            },
      );
      const collected = await client.collect(SCOPE, "night-1");
      if (collected.status !== "collected") throw new Error(collected.status);
      expect(
        collected.items.map((i) => [i.outcome, i.receipt.usdMicros, i.receipt.serviceTier]),
      ).toEqual([
        ["succeeded", BATCH_PRICE, "batch"],
        ["errored", 0, "batch"],
        ["expired", 0, "batch"],
      ]);
      await client.submit(dayJob("night-2", 1));
      transport.fail("batch_2");
      const failed = await client.collect(SCOPE, "night-2");
      expect(failed).toMatchObject({
        status: "collected",
        items: [{ outcome: "errored", receipt: { usdMicros: 0 } }],
      });
    });

    it("a lost acknowledgement is reconciled by the provider's listing, never by submitting again", async () => {
      const { stores } = await open(kind);
      const { client, transport } = jobClient(stores);
      transport.next("lose_ack");
      const found = await client.submit(dayJob());
      expect(found).toMatchObject({
        status: "submitted",
        reconciled: true,
        job: { batchId: "batch_1" },
      });
      expect(transport.submissions).toHaveLength(1);
      // A listing that cannot tell yet (no metadata, results not readable): the job waits for an operator, unsent again.
      transport.next("lose_ack");
      transport.findable = false;
      const lost = await client.submit(dayJob("night-2"));
      expect(lost).toMatchObject({
        status: "reconciliation_required",
        cause: "lost_ack",
        job: { state: "submitting" },
      });
      expect(await client.submit(dayJob("night-2"))).toMatchObject({
        status: "reconciliation_required",
        cause: "lost_ack",
      });
      expect(await client.collect(SCOPE, "night-2")).toMatchObject({
        status: "reconciliation_required",
        cause: "lost_ack",
      });
      expect(transport.submissions).toHaveLength(2);
      // Once the batch ended its custom ids can be matched: collect finds it by them and settles.
      transport.end("batch_2", (item) => ANSWER(item.customId));
      const collected = await client.collect(SCOPE, "night-2");
      expect(collected).toMatchObject({
        status: "collected",
        job: { batchId: "batch_2", state: "collected" },
      });
      expect(transport.submissions).toHaveLength(2);
    });

    it("a refusal of the submission is not a rejection proof at the batch tier: it is reconciled, never released or resent", async () => {
      const { stores } = await open(kind);
      const { client, transport } = jobClient(stores);
      const { ProviderError } = await import("@alma-harness/core");
      transport.next({
        refuse: new ProviderError("rate limited", {
          kind: "rate_limited",
          provider: "anthropic",
          status: 429,
          rejection: { kind: "anthropic_rate_limit_v1", provider: "anthropic", status: 429 },
        }),
      });
      const out = await client.submit(dayJob());
      expect(out).toMatchObject({ status: "reconciliation_required", cause: "lost_ack" });
      expect((await stores.journal.get(SCOPE, "night-1:day-1"))?.state).toBe("dispatching");
      expect((await stores.settlements.list(SCOPE)).items).toEqual([]);
      expect(transport.submissions).toHaveLength(1);
    });

    it("an unpriced batch tier never spends: refused before any claim or send, at zero cost", async () => {
      const { stores } = await open(kind);
      const { client, transport, audit } = jobClient(stores, { prices: UNPRICED_BATCH });
      const out = await client.submit(dayJob());
      expect(out).toEqual({
        status: "refused",
        customId: "day-1",
        reason: "unpriced",
        missing: "tier",
      });
      expect(transport.submissions).toHaveLength(0);
      expect(transport.validated).toHaveLength(0);
      expect((await stores.journal.list(SCOPE, { resolved: true })).items).toEqual([]);
      expect(await stores.modelJobs.get(SCOPE, "night-1")).toBeUndefined();
      expect(audit.trail("cost")).toMatchObject([
        { usdMicros: 0, refused: { reason: "unpriced" } },
      ]);
    });

    it("block caps hold the job's worst case at the batch price: at the cap it is sent, one micro-dollar under it is refused whole", async () => {
      const probe = await open(kind);
      // Measured under a block cap far above it (without one, nothing is held and nothing measured).
      const measured = await jobClient(probe.stores, {
        caps: { perTenantDayUsd: { usd: 100, onExceeded: "block" } },
      }).client.submit(dayJob());
      if (measured.status !== "submitted") throw new Error(measured.status);
      const worst = measured.job.items.reduce((sum, i) => sum + i.worstMicros, 0);
      expect(worst).toBeGreaterThan(0);
      const at = await open(kind);
      const fits = await jobClient(at.stores, {
        caps: { perTenantDayUsd: { usd: worst / 1e6, onExceeded: "block" } },
      }).client.submit(dayJob());
      expect(fits.status).toBe("submitted");
      const over = await open(kind);
      const { client, transport } = jobClient(over.stores, {
        caps: { perTenantDayUsd: { usd: (worst - 1) / 1e6, onExceeded: "block" } },
      });
      expect(await client.submit(dayJob())).toEqual({
        status: "refused",
        customId: "day-2",
        reason: "cap",
        cap: "perTenantDayUsd",
      });
      expect(transport.submissions).toHaveLength(0);
      expect((await over.stores.journal.get(SCOPE, "night-1:day-1"))?.state).toBe("not_dispatched");
      expect(await over.stores.modelJobs.get(SCOPE, "night-1")).toBeUndefined();
      // The refused job's reservations are gone: a job that fits alone is sent.
      expect((await client.submit(dayJob("night-2", 1))).status).toBe("submitted");
    });

    it("a job mixes no tenants: an item of another tenant or scope is a typed error before any I/O; routes must share one transport", async () => {
      const { stores } = await open(kind);
      const { client, transports } = jobClient(stores);
      const job = dayJob();
      const other = {
        ...job,
        items: [job.items[0], { ...job.items[1], scope: { org: "clinic-8", uid: "nightly" } }],
      } as typeof job;
      await expect(client.submit(other)).rejects.toBeInstanceOf(MixedTenantJobError);
      await expect(client.submit(other)).rejects.toMatchObject({
        code: "model_job_mixed_tenants",
        reason: "tenant",
        path: "job.items[1]",
      });
      const sameOrg = {
        ...job,
        items: [job.items[0], { ...job.items[1], scope: { org: "clinic-7", uid: "desk" } }],
      } as typeof job;
      await expect(client.submit(sameOrg)).rejects.toMatchObject({
        code: "model_job_mixed_tenants",
        reason: "scope",
      });
      const mixedRoutes = {
        ...job,
        items: [
          job.items[0],
          { ...job.items[1], intent: { tier: "fast", sensitivity: "restricted" } },
        ],
      } as typeof job;
      await expect(client.submit(mixedRoutes)).rejects.toMatchObject({ rule: "one_transport" });
      await expect(client.submit({ ...job, extra: 1 } as typeof job)).rejects.toBeInstanceOf(
        ValidationError,
      );
      // Restricted data routes to its own transport, alone.
      expect(
        (await client.submit(dayJob("night-r", 1, { sensitivity: "restricted" }))).status,
      ).toBe("submitted");
      expect(transports.map((t) => t.submissions.length)).toEqual([0, 1]);
      expect(
        (await stores.journal.list(SCOPE, { resolved: true })).items.map((r) => r.operationId),
      ).toEqual(["night-r:day-1"]);
    });

    it("another process collects what this one submitted; two collectors racing settle each item once", async () => {
      const o = await open(kind);
      const submitter = jobClient(o.stores);
      await submitter.client.submit(dayJob("night-1", 3));
      submitter.transport.end("batch_1", (item) => ANSWER(item.customId));
      // Two other processes: their own store handles, governed calls and clients; the provider is the same.
      const [a, b] = [
        jobClient(await o.again(), { transports: submitter.transports }),
        jobClient(await o.again(), { transports: submitter.transports }),
      ];
      const [x, y] = await Promise.all([
        a.client.collect(SCOPE, "night-1"),
        b.client.collect(SCOPE, "night-1"),
      ]);
      const settled = [x, y].flatMap((c) =>
        c.status === "collected" || c.status === "reconciliation_required" ? (c.items ?? []) : [],
      );
      expect(
        settled
          .filter((i) => i.applied)
          .map((i) => i.customId)
          .sort(),
      ).toEqual(["day-1", "day-2", "day-3"]);
      expect((await o.stores.settlements.list(SCOPE)).items).toHaveLength(3);
      expect((await o.stores.spend.peek(SCOPE, "patient-1", DAY)).tenantDayMicros).toBe(
        3 * BATCH_PRICE,
      );
      expect(a.audit.trail("cost").length + b.audit.trail("cost").length).toBe(3);
      const last = await a.client.collect(SCOPE, "night-1");
      expect(last).toMatchObject({ status: "collected", job: { state: "collected" } });
      expect(PRICES.version).toBe("p-jobs");
    });
  });
}
