import { microsToUsd, type Scope, validateId } from "@alma-harness/core";
import {
  type StepRequest,
  type StepResult,
  StepCallInProgressError,
  stepOperationId,
} from "@alma-harness/single-call";
import { TRIAGE_INTENT } from "../agent/triage.js";
import { onlyFields, readJsonObject } from "./body.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import type { RouteRequest, Router } from "./router.js";
import { tenant } from "./tenant-routes.js";

/** What a client may send in a call's body; the scope is the token's, the intent the host's. */
const CALL_FIELDS = [
  "sessionId",
  "system",
  "prompt",
  "messages",
  "output",
  "tools",
  "toolChoice",
  "temperature",
  "maxOutputTokens",
] as const;

/**
 * What a client sees of a step call: the status, the validated object or why there is none, and
 * the cost. Never the receipt's internals, never the model's raw text.
 */
export function callBody(result: StepResult): Record<string, unknown> {
  const base = {
    status: result.status,
    operationId: result.operationId,
    replayed: result.replayed,
  };
  switch (result.status) {
    case "completed":
      return {
        ...base,
        object: result.object,
        stopReason: result.stopReason,
        costUsd: microsToUsd(result.receipt.usdMicros),
      };
    case "invalid":
      return {
        ...base,
        reason: result.reason,
        ...(result.problem ? { problem: result.problem } : {}),
        costUsd: microsToUsd(result.receipt.usdMicros),
      };
    case "refused":
      return {
        ...base,
        reason: result.reason,
        ...(result.cap ? { cap: result.cap } : {}),
        ...(result.missing ? { missing: result.missing } : {}),
      };
    case "reconciliation_required":
      return { ...base, cause: result.cause };
  }
}

/**
 * `POST /v1/calls`: one governed structured call (the runtime's step runner), under the same
 * idempotency rules as a turn: `Idempotency-Key` is required (400 without it); a retry with the
 * same body replays the stored answer (`replayed: true`) and never dispatches again; the same key
 * with another body is 409 `step_call_conflict`; a key whose call is running elsewhere answers 202
 * `in_progress`. The tenant comes from the token, the routing intent from the host (confidential,
 * fast tier): a client never picks either. A `reconciliation_required` call is 200 with its cause,
 * as a turn's is: the host must not send it again.
 */
async function postCall(host: HostContext, route: RouteRequest, scope: Scope): Promise<Response> {
  const { request } = route;
  const key = request.headers.get("idempotency-key");
  if (key === null)
    throw new HttpError(
      "missing_idempotency_key",
      "send the call's own id in the Idempotency-Key header",
    );
  const idempotencyKey = validateId("Idempotency-Key", key);
  host.shutdown.admit();
  const body = await readJsonObject(request, host.http.bodyLimit);
  onlyFields(body, CALL_FIELDS);
  const call = {
    ...body,
    scope,
    idempotencyKey,
    intent: { ...TRIAGE_INTENT, task: "call" },
    signal: host.shutdown.signal,
  } as unknown as StepRequest;
  host.shutdown.admit();
  try {
    return json(200, callBody(await host.runtime.steps.run(call)));
  } catch (error) {
    if (error instanceof StepCallInProgressError)
      return json(202, {
        status: "in_progress",
        operationId: stepOperationId(scope, idempotencyKey),
      });
    throw error;
  }
}

/** `GET /v1/calls/:key`: the stored answer of a key of the token's tenant (404 while none is stored, and for another tenant's key). */
async function getCall(host: HostContext, route: RouteRequest, scope: Scope): Promise<Response> {
  const key = validateId("key", route.params.key);
  const result = await host.runtime.steps.read(scope, key);
  if (!result) throw new HttpError("not_found", "no stored call with this key for you");
  return json(200, callBody(result));
}

export function callRoutes(router: Router, host: HostContext): void {
  router.on(
    "POST",
    "/v1/calls",
    tenant(host, (r, s) => postCall(host, r, s)),
  );
  router.on(
    "GET",
    "/v1/calls/:key",
    tenant(host, (r, s) => getCall(host, r, s)),
  );
}
