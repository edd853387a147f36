import {
  type BudgetCapName,
  type Clock,
  type ModelJob,
  type ModelJobRequestItem,
  type ModelJobStore,
  ModelJobStateError,
  type ModelJobTransport,
  type ModelPolicy,
  type ModelRequest,
  resolveTrailKey,
  type Scope,
  systemClock,
  type TrailKey,
  type TrailKeyMaterial,
  type UnpricedReason,
  validateCustomId,
} from "@alma-harness/core";
import { scopeKey } from "@alma-harness/core/stores";
import {
  type DeferredTicket,
  type GovernedCalls,
  type TurnAccount,
  UncertainCallError,
  unpricedBeforeDispatch,
} from "@alma-harness/execution";
import { collectJob, type ModelJobCollection } from "./collect.js";
import { checkJob, type ModelJobInput } from "./input.js";
import { type RoutedItem, routeJob } from "./route.js";
import { itemIdentity, itemOfTicket, ticketOfItem } from "./tickets.js";

/** Why a job needs an operator, as a closed vocabulary: its submission's acknowledgement was lost and the provider's listing does not show it yet (`lost_ack`), an item's dispatch could not be recorded (`dispatch`), the job's state could not be recorded (`store`), or an item could not be settled (`item_uncertain`). */
export type ModelJobUncertainCause = "lost_ack" | "dispatch" | "store" | "item_uncertain";

export type ModelJobSubmission =
  | {
      readonly status: "submitted";
      readonly job: ModelJob;
      readonly replayed: boolean;
      readonly reconciled: boolean;
    }
  | {
      readonly status: "refused";
      readonly customId: string;
      readonly reason: "unpriced";
      readonly missing: UnpricedReason;
    }
  | {
      readonly status: "refused";
      readonly customId: string;
      readonly reason: "cap";
      readonly cap: BudgetCapName;
    }
  /** The job is recorded `claimed` and no submission has started: another submitter holds it (or crashed: `cancel` it). */
  | { readonly status: "in_progress"; readonly job: ModelJob }
  | { readonly status: "cancelled"; readonly job: ModelJob }
  | {
      readonly status: "reconciliation_required";
      readonly job: ModelJob;
      readonly cause: ModelJobUncertainCause;
    };

export interface ModelJobClientConfig {
  /** The one governed call: its journal, settlements, spend, prices, caps and audit govern every item. */
  readonly calls: GovernedCalls;
  readonly jobs: ModelJobStore;
  /** The batch transports by client id: the policy's `clientId` picks one (`@alma-harness/providers` builds them). */
  readonly transports: readonly ModelJobTransport[];
  /** Routes each item by its intent (tier × sensitivity), as any call; the batch tier is then pinned. */
  readonly policy: ModelPolicy;
  /** The deployment's trail key: each item's trail records carry its session's keyed pseudonym. */
  readonly trailKey: TrailKey | TrailKeyMaterial;
  readonly clock?: Clock;
  /** How long an item's journal claim lives before the sweep fences it: the provider's window and a margin (default 25 h). */
  readonly windowMs?: number;
}

const WINDOW_MS = 25 * 3_600_000;

/**
 * Model jobs (spec: model-jobs): one-call work answered by a provider's batch API at the batch
 * price, each item a governed call of `@alma-harness/execution` cut at its dispatch. `submit`
 * claims every item (its worst case reserved at the batch tier's price) and records the job before
 * anything is sent, then sends it once; `collect` polls it and settles each item through its own
 * receipt. Every state lives in the `ModelJobStore` and the journal: another process (a routine's
 * next run) collects what this one submitted.
 */
export class ModelJobClient {
  readonly #calls: GovernedCalls;
  readonly #jobs: ModelJobStore;
  readonly #transports: ReadonlyMap<string, ModelJobTransport>;
  readonly #policy: ModelPolicy;
  readonly #key: TrailKey;
  readonly #clock: Clock;
  readonly #windowMs: number;

  constructor(config: ModelJobClientConfig) {
    if (config === null || typeof config !== "object")
      throw new TypeError("ModelJobClient needs a configuration");
    if (typeof config.calls?.deferred?.claim !== "function")
      throw new TypeError("ModelJobClient: calls must be a GovernedCalls");
    for (const m of ["create", "get", "advance", "settleItem", "list"] as const)
      if (typeof config.jobs?.[m] !== "function")
        throw new TypeError("ModelJobClient: jobs is not a ModelJobStore");
    if (typeof config.policy?.resolve !== "function")
      throw new TypeError("ModelJobClient: policy must resolve");
    const byId = new Map<string, ModelJobTransport>();
    for (const t of config.transports ?? []) {
      if (
        typeof t?.submit !== "function" ||
        typeof t.find !== "function" ||
        typeof t.poll !== "function" ||
        typeof t.results !== "function"
      )
        throw new TypeError("ModelJobClient: a transport is not a ModelJobTransport");
      if (byId.has(t.id)) throw new TypeError(`ModelJobClient: two transports are ${t.id}`);
      byId.set(t.id, t);
    }
    this.#calls = config.calls;
    this.#jobs = config.jobs;
    this.#transports = byId;
    this.#policy = config.policy;
    this.#key = resolveTrailKey(config.trailKey);
    this.#clock = config.clock ?? systemClock;
    const windowMs = config.windowMs ?? WINDOW_MS;
    if (!Number.isSafeInteger(windowMs) || windowMs < 1)
      throw new TypeError("ModelJobClient: windowMs must be a positive integer");
    this.#windowMs = windowMs;
  }

  /**
   * Submits the job once. Checked and routed before any I/O (a mixed-tenant job, an unknown field, a
   * route with no transport: typed errors); an item the table cannot price at the batch tier, or
   * whose worst case does not fit under a block cap, refuses the whole job at zero cost (nothing
   * of it sent; items claimed before it cancelled). A job id seen before is never submitted again:
   * its state is answered (and a lost acknowledgement reconciled). Throws `UncertainCallError` when
   * an item's claim could not be made durable (nothing was sent).
   */
  async submit(input: ModelJobInput): Promise<ModelJobSubmission> {
    const job = checkJob(input);
    const { transport, items } = routeJob(job, this.#policy, this.#transports);
    const seen = await this.#jobs.get(job.scope, job.jobId);
    if (seen) return this.#answer(seen, transport);
    const account = this.#calls.account();
    const firstUnpriced = items.find(
      (r) => unpricedBeforeDispatch(this.#calls.prices, r.choice, r.request) !== undefined,
    );
    // An unpriced item refuses the job before any claim: only its zero-cost refusal is written.
    const order = firstUnpriced ? [firstUnpriced] : items;
    const tickets: DeferredTicket[] = [];
    // What goes out is what the governed call claimed and validated (stamped with its route's sensitivity).
    const sent: { readonly customId: string; readonly request: ModelRequest }[] = [];
    for (const routed of order) {
      const claim = await this.#claim(job.scope, job.jobId, routed, transport, account).catch(
        async (error: unknown) => {
          await this.#cancel(tickets, "store", account);
          throw error;
        },
      );
      if (claim.status === "refused") {
        await this.#cancel(tickets, "invalid", account);
        return claim.reason === "unpriced"
          ? {
              status: "refused",
              customId: routed.item.customId,
              reason: "unpriced",
              missing: claim.missing,
            }
          : { status: "refused", customId: routed.item.customId, reason: "cap", cap: claim.cap };
      }
      tickets.push(claim.ticket);
      sent.push({ customId: routed.item.customId, request: claim.request });
    }
    const now = this.#clock.now();
    const record: ModelJob = {
      scope: job.scope,
      jobId: job.jobId,
      transportId: transport.id,
      state: "claimed",
      items: tickets.map((ticket, i) =>
        itemOfTicket((items[i] as RoutedItem).item.customId, ticket),
      ),
      createdAt: now,
      updatedAt: now,
    };
    const created = await this.#record(record, tickets, account);
    const submitting = await this.#startSubmitting(created, tickets, account);
    for (const [i, ticket] of tickets.entries()) {
      try {
        await this.#calls.deferred.dispatch(ticket);
      } catch (error) {
        // A scope fence refused this item: it and the items after it are still `prepared`, cancelled here.
        if (error instanceof UncertainCallError && error.uncertainCause === "scope_fenced")
          await this.#cancel(tickets.slice(i), "scope_fenced", account);
        // Nothing was sent, but the journal may hold `dispatching`: never undone, never sent.
        return { status: "reconciliation_required", job: submitting, cause: "dispatch" };
      }
    }
    return this.#send(submitting, transport, sent);
  }

  /** Polls the job and, once the provider ended it, settles every item once (see `collectJob`). Usable from any process. */
  async collect(scope: Scope, jobId: string): Promise<ModelJobCollection> {
    const { scope: s } = scopeKey(scope);
    const id = validateCustomId("jobId", jobId);
    const job = await this.#jobs.get(s, id);
    if (!job) throw new ModelJobStateError(undefined, `no model job ${id} in this scope`);
    const transport = this.#transports.get(job.transportId);
    if (!transport)
      throw new TypeError(
        `ModelJobClient: job ${id} was submitted through ${job.transportId}, which is not configured`,
      );
    let current = job;
    if (current.state === "submitting") {
      const answered = await this.#reconcile(current, transport);
      if (answered.status !== "submitted")
        return { status: "reconciliation_required", job: current, cause: "lost_ack" };
      current = answered.job;
    }
    if (current.state === "claimed" || current.state === "cancelled")
      return { status: "not_submitted", job: current };
    return collectJob(
      { calls: this.#calls, jobs: this.#jobs, transport, key: this.#key, clock: this.#clock },
      current,
    );
  }

  /** Gives up a job recorded `claimed` (nothing of it was sent): `cancelled`, its items `not_dispatched`, their reservations released. */
  async cancel(scope: Scope, jobId: string): Promise<ModelJob> {
    const { scope: s } = scopeKey(scope);
    const id = validateCustomId("jobId", jobId);
    const cancelled = await this.#jobs.advance(s, id, {
      from: "claimed",
      to: "cancelled",
      at: this.#clock.now(),
    });
    await this.#cancel(
      cancelled.items.map((item) => ticketOfItem(s, item, this.#key)),
      "aborted",
    );
    return cancelled;
  }

  #claim(
    scope: Scope,
    jobId: string,
    routed: RoutedItem,
    transport: ModelJobTransport,
    account: TurnAccount,
  ) {
    const identity = itemIdentity(
      scope,
      jobId,
      routed.item.customId,
      routed.item.sessionId,
      this.#key,
    );
    return this.#calls.deferred.claim(identity, routed.choice, routed.request, {
      account,
      route: { tier: routed.item.intent.tier, sensitivity: routed.item.intent.sensitivity },
      validate: (request) => transport.validate(request),
      provider: transport.provider,
      deadlineMs: this.#windowMs,
    });
  }

  /** Cancels claims that were never dispatched (best effort: a claim left `prepared` expires as not dispatched). */
  async #cancel(
    tickets: readonly DeferredTicket[],
    cause: "store" | "invalid" | "aborted" | "scope_fenced",
    account?: TurnAccount,
  ): Promise<void> {
    for (const ticket of tickets)
      await this.#calls.deferred.cancel(ticket, cause, account).catch(() => undefined);
  }

  /** The job recorded `claimed`; a create that failed is read back (it may have landed), else its claims are cancelled. */
  async #record(
    record: ModelJob,
    tickets: readonly DeferredTicket[],
    account: TurnAccount,
  ): Promise<ModelJob> {
    try {
      return (await this.#jobs.create(record)).job;
    } catch (error) {
      const landed = await this.#jobs.get(record.scope, record.jobId).catch(() => undefined);
      if (landed?.state === "claimed") return landed;
      await this.#cancel(tickets, "store", account);
      throw error;
    }
  }

  /** `claimed → submitting`, the one submitter's step; a failed write is read back, and a job left claimed is cancelled. */
  async #startSubmitting(
    job: ModelJob,
    tickets: readonly DeferredTicket[],
    account: TurnAccount,
  ): Promise<ModelJob> {
    try {
      return await this.#jobs.advance(job.scope, job.jobId, {
        from: "claimed",
        to: "submitting",
        at: this.#clock.now(),
      });
    } catch (error) {
      const now = await this.#jobs.get(job.scope, job.jobId).catch(() => undefined);
      if (now?.state === "submitting") return now;
      await this.#cancel(tickets, "store", account);
      await this.#jobs
        .advance(job.scope, job.jobId, { from: "claimed", to: "cancelled", at: this.#clock.now() })
        .catch(() => undefined);
      throw error;
    }
  }

  /** The one submission; a throw is a lost acknowledgement until the provider's listing says otherwise. */
  async #send(
    job: ModelJob,
    transport: ModelJobTransport,
    items: readonly ModelJobRequestItem[],
  ): Promise<ModelJobSubmission> {
    let batchId: string;
    try {
      batchId = (await transport.submit(job.jobId, items)).batchId;
    } catch {
      // Never a refusal, never a rejection proof at the batch tier, never sent again: reconcile.
      const answered = await this.#reconcile(job, transport);
      return answered.status === "submitted" ? { ...answered, reconciled: true } : answered;
    }
    return this.#submitted(job, batchId, false);
  }

  async #submitted(
    job: ModelJob,
    batchId: string,
    reconciled: boolean,
  ): Promise<ModelJobSubmission> {
    try {
      const next = await this.#jobs.advance(job.scope, job.jobId, {
        from: "submitting",
        to: "submitted",
        at: this.#clock.now(),
        batchId,
      });
      return { status: "submitted", job: next, replayed: false, reconciled };
    } catch {
      const now = await this.#jobs.get(job.scope, job.jobId).catch(() => undefined);
      if (now?.state === "submitted" || now?.state === "collected")
        return { status: "submitted", job: now, replayed: false, reconciled };
      // The provider holds the batch; the next collect finds it again by the job's metadata or custom ids.
      return { status: "reconciliation_required", job: now ?? job, cause: "store" };
    }
  }

  /** A `submitting` job: the provider's listing since the submission started, read-only; found, the batch id is recorded. */
  async #reconcile(job: ModelJob, transport: ModelJobTransport): Promise<ModelJobSubmission> {
    const since = job.submittingAt ?? job.createdAt;
    const found = await transport
      .find(
        job.jobId,
        job.items.map((i) => i.customId),
        since,
      )
      .catch(() => ({ status: "unresolved" as const }));
    if (found.status !== "found")
      return { status: "reconciliation_required", job, cause: "lost_ack" };
    return this.#submitted(job, found.batchId, true);
  }

  /** A job seen before: its state, never a second submission. */
  async #answer(job: ModelJob, transport: ModelJobTransport): Promise<ModelJobSubmission> {
    if (job.state === "claimed") return { status: "in_progress", job };
    if (job.state === "cancelled") return { status: "cancelled", job };
    if (job.state === "submitting") {
      const answered = await this.#reconcile(job, transport);
      return answered.status === "submitted" ? { ...answered, replayed: true } : answered;
    }
    return { status: "submitted", job, replayed: true, reconciled: false };
  }
}
