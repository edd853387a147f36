import type { AuditLog } from "../stores/audit.js";
import { sessionMarker } from "../stores/erasure.js";
import type { TrailKey, TrailKeyMaterial } from "../trail.js";
import { InMemoryAdmissionStore } from "./admissions.js";
import { InMemoryAuditLog } from "./audit.js";
import { InMemoryErasure } from "./erase.js";
import { InMemoryExecutionStore } from "./execution.js";
import { InMemorySessionLabelStore } from "./labels.js";
import { InMemoryExecutionResultStore } from "./results.js";
import { InMemoryRoutineRunStore, InMemoryRoutineStore } from "./routines.js";
import { InMemorySessionStore } from "./sessions.js";
import { InMemoryCostSettlementStore, InMemorySpendStore } from "./settlements.js";
import { InMemoryModelJobStore } from "./model-jobs.js";
import { InMemoryParkedTurnStore } from "./parked.js";
import { InMemoryUsageInbox } from "./usage-inbox.js";

/** One linked set of the in-memory stores, as a composition hands them out. */
export interface InMemoryStores<A extends AuditLog = InMemoryAuditLog> {
  readonly admissions: InMemoryAdmissionStore;
  /** Turns parked on permission asks; a park and a claim move `admissions` in the same step. */
  readonly parked: InMemoryParkedTurnStore;
  /** Fenced by `admissions`. */
  readonly sessions: InMemorySessionStore;
  /** The step results. */
  readonly results: InMemoryExecutionResultStore;
  /** The root (final) results, fenced by `admissions`. */
  readonly rootResults: InMemoryExecutionResultStore;
  /** The execution journal, fenced by `admissions`, holding reservations in `spend`. */
  readonly journal: InMemoryExecutionStore;
  /** Moves `spend`. */
  readonly settlements: InMemoryCostSettlementStore;
  readonly spend: InMemorySpendStore;
  readonly labels: InMemorySessionLabelStore;
  /** Late authoritative usage, evidence only (erasure keeps it under the session's mark). */
  readonly usageInbox: InMemoryUsageInbox;
  /** Provider batch jobs and their items (erasure keeps an item under its session's mark). */
  readonly modelJobs: InMemoryModelJobStore;
  /** Routines (their goals are the scope's content: `eraseScope` removes them). */
  readonly routines: InMemoryRoutineStore;
  /** Routine runs (erasure keeps a session's under its mark; `eraseScope` removes them). */
  readonly routineRuns: InMemoryRoutineRunStore;
  readonly audit: A;
  /** Erasure over every store of the set, in one synchronous step. */
  readonly erasure: InMemoryErasure;
}

/**
 * Fresh in-memory stores, linked as the durable stores are: the sessions, the root results and the
 * journal checked against one admission store, the journal and the settlements on one spend store.
 * `audit` replaces the default `InMemoryAuditLog` (a test passes a `RecordingAuditLog`); `trailKey`
 * keys the marks of erased sessions (`erasedSessionMark`), as the runtime compositions always do.
 */
export function inMemoryStores(opts?: {
  readonly trailKey?: TrailKey | TrailKeyMaterial;
}): InMemoryStores;
export function inMemoryStores<A extends AuditLog>(opts: {
  readonly audit: A;
  readonly trailKey?: TrailKey | TrailKeyMaterial;
}): InMemoryStores<A>;
export function inMemoryStores(
  opts: { readonly audit?: AuditLog; readonly trailKey?: TrailKey | TrailKeyMaterial } = {},
): InMemoryStores<AuditLog> {
  const marker = sessionMarker(opts.trailKey);
  const admissions = new InMemoryAdmissionStore();
  const spend = new InMemorySpendStore();
  const stores = {
    admissions,
    parked: new InMemoryParkedTurnStore(admissions),
    sessions: new InMemorySessionStore(admissions, marker),
    results: new InMemoryExecutionResultStore({ marker }),
    rootResults: new InMemoryExecutionResultStore({ admissions, marker }),
    journal: new InMemoryExecutionStore({ admissions, spend }),
    settlements: new InMemoryCostSettlementStore({ spend }),
    spend,
    labels: new InMemorySessionLabelStore(marker),
    usageInbox: new InMemoryUsageInbox(marker),
    modelJobs: new InMemoryModelJobStore(marker),
    routines: new InMemoryRoutineStore(),
    routineRuns: new InMemoryRoutineRunStore(),
    audit: opts.audit ?? new InMemoryAuditLog(),
  };
  // An audit log of the host's own (not the in-memory one) keeps its events: it is erased by its owner.
  const audit = stores.audit instanceof InMemoryAuditLog ? [stores.audit] : [];
  const { admissions: _a, audit: _l, ...rest } = stores;
  return {
    ...stores,
    erasure: new InMemoryErasure([admissions, ...Object.values(rest), ...audit], marker),
  };
}
