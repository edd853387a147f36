import {
  ConflictError,
  type ExecutionStore,
  type Fence,
  FenceError,
  type ModelChoice,
  type ModelRequest,
  ProviderError,
  requestChars,
  ScopeFencedError,
  type Sensitivity,
  type TrailValue,
  trailJoin,
  trailKind,
  utcDay,
  worstCaseMicros,
} from "@alma-harness/core";
import { type Ledger, ledger } from "./account.js";
import { UncertainCallError } from "./errors.js";
import type { CallIdentity, CallOptions, CallOutcome, ResolvedCallsConfig } from "./types.js";
import { unpricedBeforeDispatch } from "./preflight.js";
import { refusedTrail, requestTrails } from "./trails.js";

/** What the shared pre-dispatch path reads of a call's options (`run` gives all of `CallOptions`). */
export type AdmitOptions = Pick<CallOptions, "account" | "route" | "lifecycle">;

/** A call claimed by the shared pre-dispatch path: `prepared` in the journal, its trails written. */
export interface Admitted {
  readonly status: "claimed";
  readonly request: ModelRequest;
  readonly fence: Fence;
  readonly books: Ledger;
  readonly worst: number;
  readonly before: SpendBefore | undefined;
  readonly now: number;
}

/** Spend read before a call (a session or tenant-day cap applies): the base of the crossings it reports. */
export interface SpendBefore {
  readonly sessionMicros: number;
  readonly tenantDayMicros: number;
}

type Refused = Extract<CallOutcome, { status: "refused" }>;

/**
 * Everything before the dispatch, shared by `run` and the deferred face: price preflight, the
 * worst case against the turn's cap, the spend read, the claim with its reservation, the request's
 * own check (`maxRequestChars`, `validate`: a refusal ends the claim `not_dispatched`, `invalid`),
 * the request trails. Refused: nothing claimed; claimed: the call is `prepared` with its trails.
 */
export async function admit(
  config: ResolvedCallsConfig,
  identity: CallIdentity,
  choice: ModelChoice,
  asked: ModelRequest,
  options: AdmitOptions,
  validate: (request: ModelRequest) => void,
  provider: string,
  deadlineMs?: number,
): Promise<Admitted | Refused> {
  // The route's sensitivity travels with the request: an adapter that routes by data policy
  // refuses in `validate`, before the dispatch, a sensitivity its policy may not carry.
  const request = routed(asked, options.route.sensitivity, cacheKeyOf(config, identity));
  const books = ledger(options.account);
  const now = config.clock.now();
  const priced = holdWorstCase(config, choice, request, books);
  if (priced.status === "refused") {
    const { refused } = priced;
    await refusedTrail(config.audit, identity, choice, now, refused.reason, priced.detail);
    return refused;
  }
  const { worst } = priced;
  // The worst case is held in the account from the turn's check on: every way out short of a
  // claim gives it back, once (a claimed call's later paths release it themselves).
  let before: SpendBefore | undefined;
  let claim: Awaited<ReturnType<typeof claimCall>>;
  try {
    before = config.peeks ? await peekSpend(config, identity, now) : undefined;
    const deadline = deadlineMs ?? config.dispatchDeadlineMs;
    claim = await claimCall(config, identity, choice, now, worst, deadline);
    if (claim.status === "claimed")
      await checkClaimed(config, identity, claim.fence, validate, request);
  } catch (error) {
    books.reservedMicros -= worst;
    throw error;
  }
  if (claim.status === "refused") {
    books.reservedMicros -= worst;
    await refusedTrail(config.audit, identity, choice, now, "cap", trailKind(claim.cap));
    return { status: "refused", reason: "cap", cap: claim.cap };
  }
  books.calls += 1;
  books.unsettled.add(identity.operationId);
  const claimed = { config, identity, fence: claim.fence, books, worst, now };
  await trailsOrCancel(claimed, choice, options, provider, request.messages.length);
  return { status: "claimed", request, fence: claim.fence, books, worst, before, now };
}

/**
 * The checks before anything is written, and the hold: every row the request can reach is priced,
 * and the worst case fits under the turn's block cap beside what the turn spent and holds; then it
 * is held in the account. Check and hold are one synchronous step, before the call's first await:
 * parallel calls of a turn each read the holds the others made, whatever the spend read or the
 * claim then awaits. A refusal holds nothing and carries the detail its trail record names.
 */
function holdWorstCase(
  config: ResolvedCallsConfig,
  choice: ModelChoice,
  request: ModelRequest,
  books: Ledger,
):
  | { readonly status: "priced"; readonly worst: number }
  | { readonly status: "refused"; readonly refused: Refused; readonly detail: TrailValue } {
  const missing = unpricedBeforeDispatch(config.prices, choice, request);
  if (missing) {
    const detail = trailJoin(trailKind("no_price"), trailKind(missing));
    return {
      status: "refused",
      refused: { status: "refused", reason: "unpriced", missing },
      detail,
    };
  }
  // Measured only under a block cap: without one, nothing is held and the request is not sized.
  const worst = config.blocks
    ? (worstCaseMicros(config.prices, choice, request) ?? Number.POSITIVE_INFINITY)
    : 0;
  const turnCap = config.caps.perTurnUsd;
  if (
    turnCap?.onExceeded === "block" &&
    books.spentMicros + books.reservedMicros + worst > turnCap.usdMicros
  ) {
    const refused: Refused = { status: "refused", reason: "cap", cap: "perTurnUsd" };
    return { status: "refused", refused, detail: trailKind("perTurnUsd") };
  }
  books.reservedMicros += worst;
  return { status: "priced", worst };
}

/**
 * The request's own check, no I/O, once the call is claimed (spec: refused-request): a request over
 * `maxRequestChars` (`requestChars`) or refused by the adapter's `validate` is never sent. Its claim
 * ends `not_dispatched` with cause `invalid` (the store releases its reservation), and the call is
 * uncertain `call:<kind>:request_invalid`: the same request is refused again, so no attempt follows.
 * A cancel that fails leaves the record `prepared`, for the sweep to close as not dispatched.
 */
async function checkClaimed(
  config: ResolvedCallsConfig,
  identity: CallIdentity,
  fence: Fence,
  validate: (request: ModelRequest) => void,
  request: ModelRequest,
): Promise<void> {
  const refusal = refusalOf(config.maxRequestChars, identity.kind, validate, request);
  if (refusal === undefined) return;
  await config.journal.cancelPrepared(fence, "invalid", config.clock.now()).catch(() => undefined);
  throw refusal;
}

/** Why a request cannot be sent, or nothing: over the ceiling, refused by the adapter, or a `validate` that broke. */
function refusalOf(
  maxRequestChars: number | undefined,
  kind: CallIdentity["kind"],
  validate: (request: ModelRequest) => void,
  request: ModelRequest,
): UncertainCallError | undefined {
  const invalid = `call:${kind}:request_invalid` as const;
  if (maxRequestChars !== undefined) {
    const chars = requestChars(request);
    if (chars > maxRequestChars)
      return new UncertainCallError(
        invalid,
        `the request is ${chars} characters, over maxRequestChars (${maxRequestChars})`,
      );
  }
  try {
    validate(request);
  } catch (error) {
    if (error instanceof ProviderError)
      return new UncertainCallError(invalid, error.message, error);
    return new UncertainCallError(
      `call:${kind}:error`,
      "the request could not be validated",
      error,
    );
  }
  return undefined;
}

/** The routing (and lifecycle) trails of a claimed call; if they fail, the claim is cancelled unsent. */
async function trailsOrCancel(
  claimed: {
    readonly config: ResolvedCallsConfig;
    readonly identity: CallIdentity;
    readonly fence: Fence;
    readonly books: Ledger;
    readonly worst: number;
    readonly now: number;
  },
  choice: ModelChoice,
  options: AdmitOptions,
  provider: string,
  messageCount: number,
): Promise<void> {
  const { config, identity, books, now } = claimed;
  try {
    await requestTrails(config.audit, identity, choice, options, now, provider, messageCount);
  } catch (error) {
    // Nothing was sent: the claim ends as not dispatched, and its reservation with it.
    books.reservedMicros -= claimed.worst;
    await config.journal.cancelPrepared(claimed.fence, "audit", now).then(
      () => {
        books.unsettled.delete(identity.operationId);
      },
      () => undefined,
    );
    if (error instanceof UncertainCallError)
      throw new UncertainCallError(error.uncertainCause, error.message, error.cause, "unsent");
    throw new UncertainCallError(
      `call:${identity.kind}:error`,
      "the call's trails could not be written; nothing was sent",
      error,
      "unsent",
    );
  }
}

/** The host's cache key for the call; a throw or a non-string makes the call uncertain, nothing claimed. */
function cacheKeyOf(config: ResolvedCallsConfig, identity: CallIdentity): string | undefined {
  const hook = config.cacheKey;
  if (!hook) return undefined;
  try {
    const key = hook({
      scope: identity.scope,
      sessionId: identity.sessionId,
      kind: identity.kind,
    });
    if (key !== undefined && typeof key !== "string")
      throw new TypeError("cacheKey must return a string or nothing");
    return key;
  } catch (error) {
    throw new UncertainCallError(
      `call:${identity.kind}:error`,
      "the cache key could not be derived",
      error,
    );
  }
}

async function peekSpend(
  config: ResolvedCallsConfig,
  identity: CallIdentity,
  now: number,
): Promise<SpendBefore> {
  try {
    return await config.spend.peek(identity.scope, identity.sessionId, utcDay(now));
  } catch (error) {
    throw new UncertainCallError(
      `call:${identity.kind}:error`,
      "spend could not be read",
      error,
      "unsent",
    );
  }
}

/**
 * The one durable write before the dispatch: the journal claim, fenced by the admission, with the
 * worst case reserved against the session and tenant-day caps. A claim that cannot be made is uncertain.
 */
async function claimCall(
  config: ResolvedCallsConfig,
  identity: CallIdentity,
  choice: ModelChoice,
  now: number,
  worst: number,
  deadlineMs: number,
) {
  const deadlineAt = now + deadlineMs;
  let claim: Awaited<ReturnType<ExecutionStore["claim"]>>;
  try {
    claim = await config.journal.claim(
      {
        scope: identity.scope,
        operationId: identity.operationId,
        sessionId: identity.sessionId,
        rootKey: identity.rootKey,
        turnId: identity.turnId,
        kind: identity.kind,
        clientId: choice.clientId,
        model: choice.model,
        priceVersion: config.prices.version,
        policyVersion: config.policyVersion,
        createdAt: now,
        deadlineAt,
      },
      {
        ...(identity.admissionId !== undefined ? { admissionId: identity.admissionId } : {}),
        ...(config.reserves
          ? {
              reservation: {
                day: utcDay(now),
                usdMicros: worst,
                limits: config.limits,
                expiresAt: deadlineAt + config.reservationHoldMs,
              },
            }
          : {}),
      },
    );
  } catch (error) {
    throw claimFailure(identity, error);
  }
  if (claim.status === "exists") {
    throw new UncertainCallError(
      `call:${identity.kind}:error`,
      `operation ${identity.operationId} was already claimed; it is never sent twice`,
    );
  }
  return claim;
}

/** A claim the journal refused or failed: nothing was sent; only a plain store failure may be tried again. */
function claimFailure(identity: CallIdentity, error: unknown): UncertainCallError {
  // An operator's scope fence first (it is a FenceError too): nothing was claimed or sent.
  if (error instanceof ScopeFencedError)
    return new UncertainCallError(
      "scope_fenced",
      "the turn's scope is fenced: nothing was claimed or sent",
      error,
    );
  if (error instanceof FenceError)
    return new UncertainCallError(
      "admission_fenced",
      "the turn's admission is no longer active: nothing was claimed or sent",
      error,
    );
  // Another claim holds this operation id: an identity conflict, never tried again (nor its record touched).
  if (error instanceof ConflictError)
    return new UncertainCallError(
      `call:${identity.kind}:error`,
      `operation ${identity.operationId} is claimed with other content`,
      error,
    );
  return new UncertainCallError(
    `call:${identity.kind}:error`,
    "the call could not be claimed",
    error,
    "unsent",
  );
}

/** The request stamped with the route's sensitivity and the cache key (a frozen copy; the same request when it already carries them). */
function routed(
  request: ModelRequest,
  sensitivity: Sensitivity,
  cacheKey: string | undefined,
): ModelRequest {
  if (request.sensitivity === sensitivity && request.cacheKey === cacheKey) return request;
  return Object.freeze({
    ...request,
    sensitivity,
    ...(cacheKey !== undefined ? { cacheKey } : {}),
  });
}
