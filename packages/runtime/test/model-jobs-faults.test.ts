import type { ModelJobSubmission } from "@alma-harness/batch";
import { succeeded } from "@alma-harness/batch/testing";
import { InjectedStoreFault, tapStore } from "@alma-harness/testing";
import { afterEach, describe, expect, it } from "vitest";
import {
  DAY,
  dayJob,
  type JobStores,
  jobClient,
  type OpenedJobStores,
  openJobStores,
  SCOPE,
} from "./model-jobs-kit.js";
import { skipNote } from "./open.js";
import { KINDS } from "./store-kit.js";

const opened: OpenedJobStores[] = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
});

/** The job stores with every call counted, and call number `failAt` failing `before` (nothing done) or `after` (done, then reported failed). */
function faulty(
  stores: JobStores,
  failAt: number,
  mode: "before" | "after",
  seen: string[],
): JobStores {
  let n = 0;
  const wrap = <T extends object>(name: string, store: T): T =>
    tapStore(store, async (method, call) => {
      n += 1;
      seen.push(`${name}.${method}`);
      if (n !== failAt) return call();
      if (mode === "before") throw new InjectedStoreFault("before", name, method);
      await call();
      throw new InjectedStoreFault("after", name, method);
    });
  return {
    journal: wrap("journal", stores.journal),
    settlements: wrap("settlements", stores.settlements),
    spend: wrap("spend", stores.spend),
    modelJobs: wrap("modelJobs", stores.modelJobs),
  };
}

/** One night: submit, the provider ends the batch, collect; every failure is the client's to report, none is retried blindly. */
async function night(stores: JobStores, client: ReturnType<typeof jobClient>) {
  const submitted: ModelJobSubmission | Error = await client.client
    .submit(dayJob())
    .catch((e: Error) => e);
  for (const id of client.transport.batches)
    client.transport.end(id, (item) => succeeded(item.customId, "ok", 1_000, 100));
  const collected = await client.client.collect(SCOPE, "night-1").catch((e: Error) => e);
  return { submitted, collected, stores };
}

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(
    `model jobs under a store fault at each call on ${kind}${skipNote(enabled)}`,
    () => {
      it("at every store call, before or after its effect: never submitted twice, never settled twice, spend equal to the receipts, and a clean retry finishes or says reconciliation_required", async () => {
        const clean = await openJobStores(kind);
        opened.push(clean);
        const calls: string[] = [];
        const counted = faulty(clean.stores, 0, "before", calls);
        await night(counted, jobClient(counted));
        const total = calls.length;
        expect(total).toBeGreaterThan(10);
        for (let failAt = 1; failAt <= total; failAt++) {
          for (const mode of ["before", "after"] as const) {
            const o = await openJobStores(kind);
            opened.push(o);
            const seen: string[] = [];
            const broken = faulty(o.stores, failAt, mode, seen);
            const first = jobClient(broken);
            await night(broken, first);
            // The next night's run, another process on the same stores, with the same provider: it retries the job id.
            const retry = jobClient(o.stores, { transports: first.transports, clock: first.clock });
            const again = await night(o.stores, retry);
            const where = `${mode} call ${failAt} (${seen[failAt - 1]})`;
            expect(
              first.transport.submissions.length,
              `${where}: submitted at most once`,
            ).toBeLessThanOrEqual(1);
            const receipts = (await o.stores.settlements.list(SCOPE)).items;
            expect(
              new Set(receipts.map((r) => r.receipt.settlementId)).size,
              `${where}: one receipt per item`,
            ).toBe(receipts.length);
            expect(receipts.length, where).toBeLessThanOrEqual(2);
            const spent = receipts.reduce((sum, r) => sum + r.receipt.usdMicros, 0);
            expect(
              (await o.stores.spend.peek(SCOPE, "patient-1", DAY)).tenantDayMicros,
              `${where}: spend is the receipts`,
            ).toBe(spent);
            const job = await o.stores.modelJobs.get(SCOPE, "night-1");
            const status = again.collected instanceof Error ? "error" : again.collected.status;
            if (job?.state === "collected") expect(receipts.length, where).toBe(2);
            // A job that was sent ends collected, or waits for an operator; it is never silently lost.
            if (first.transport.submissions.length === 1)
              expect(["collected", "reconciliation_required"], where).toContain(status);
          }
        }
      });
    },
  );
}
