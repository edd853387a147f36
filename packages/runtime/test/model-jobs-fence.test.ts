import type { AdmissionStore } from "@alma-harness/core";
import { tapStore } from "@alma-harness/testing";
import { describe, expect, it } from "vitest";
import {
  DAY,
  dayJob,
  type JobStores,
  jobClient,
  jobStoresPerTest,
  SCOPE,
} from "./model-jobs-kit.js";
import { skipNote } from "./open.js";
import { KINDS } from "./store-kit.js";

const opener = jobStoresPerTest();
const open = async (kind: (typeof KINDS)[number][0]) =>
  (await opener(kind)).stores as JobStores & { readonly admissions: AdmissionStore };

const fence = (stores: { readonly admissions: AdmissionStore }) =>
  stores.admissions.fenceScope({
    target: { org: SCOPE.org },
    reason: "suspended",
    now: Date.UTC(2026, 0, 1, 22),
  });

/** The job's journal records, by custom id order: state and not-dispatched cause. */
async function records(stores: JobStores) {
  return (await stores.journal.list(SCOPE, { resolved: true })).items.map((r) => [
    r.state,
    r.notDispatchedCause,
  ]);
}

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(
    `a model job under a scope fence on ${kind}${skipNote(enabled)}`,
    () => {
      it("a job of a fenced scope dispatches and submits nothing: its claims end not_dispatched (scope_fenced), their reservations released", async () => {
        const stores = await open(kind);
        const jobs = jobClient(stores, { caps: { perTenantDayUsd: 1 } });
        await fence(stores);
        const submission = await jobs.client.submit(dayJob());
        expect(submission).toMatchObject({ status: "reconciliation_required", cause: "dispatch" });
        expect(jobs.transport.submissions).toEqual([]);
        expect(await records(stores)).toEqual([
          ["not_dispatched", "scope_fenced"],
          ["not_dispatched", "scope_fenced"],
        ]);
        expect(await stores.spend.peek(SCOPE, "patient-1", DAY)).toEqual({
          sessionMicros: 0,
          tenantDayMicros: 0,
        });
      });

      it("a fence landing between two items' dispatches: nothing is submitted, the item after it is cancelled", async () => {
        const stores = await open(kind);
        let dispatches = 0;
        const journal = tapStore(stores.journal, async (method, call) => {
          if (method === "dispatch" && ++dispatches === 2) await fence(stores);
          return call();
        });
        const jobs = jobClient({ ...stores, journal });
        expect(await jobs.client.submit(dayJob())).toMatchObject({
          status: "reconciliation_required",
          cause: "dispatch",
        });
        expect(jobs.transport.submissions).toEqual([]);
        // The first item was dispatched before the fence (never undone, never sent); the second never was.
        expect(await records(stores)).toEqual([
          ["dispatching", undefined],
          ["not_dispatched", "scope_fenced"],
        ]);
      });
    },
  );
}
