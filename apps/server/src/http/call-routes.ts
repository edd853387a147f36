import { microsToUsd, type Scope } from "@alma-harness/core";
import {
  type StepRequest,
  type StepResult,
  StepCallInProgressError,
  stepOperationId,
} from "@alma-harness/single-call";
import { TRIAGE_INTENT } from "../agent/triage.js";
import { createRoute, z } from "@hono/zod-openapi";
import { type HostApp, jsonBody, scopeOf, tenantAuth } from "./api.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import { CallAnswer } from "./answers.js";
import { RETRY_AFTER_S } from "./prefer.js";
import { answers, body, Id, params, TENANT } from "./schemas.js";
import { keyFirst } from "./tenant-api.js";

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
async function postCall(
  host: HostContext,
  scope: Scope,
  idempotencyKey: string,
  sent: Record<string, unknown>,
): Promise<Response> {
  const call = {
    ...sent,
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
      return json(
        202,
        { status: "in_progress", operationId: stepOperationId(scope, idempotencyKey) },
        {
          location: `/v1/calls/${encodeURIComponent(idempotencyKey)}`,
          "retry-after": String(RETRY_AFTER_S.in_progress),
        },
      );
    throw error;
  }
}

/** `GET /v1/calls/:key`: the stored answer of a key of the token's tenant (404 while none is stored, and for another tenant's key). */
async function getCall(host: HostContext, scope: Scope, key: string): Promise<Response> {
  const result = await host.runtime.steps.read(scope, key);
  if (!result) throw new HttpError("not_found", "no stored call with this key for you");
  return json(200, callBody(result));
}

/** What a client may send in a call's body; the scope is the token's, the intent the host's. */
const CallBody = body({
  sessionId: Id.optional(),
  system: z.string().optional(),
  prompt: z.string().optional().openapi({ description: "the request, or `messages`" }),
  messages: z.array(z.unknown()).optional().openapi({
    description: "`{role, text | blocks}` messages, or `prompt`",
  }),
  output: z.looseObject({ name: z.string(), schema: z.unknown() }).openapi({
    description:
      "the answer's shape: `{name, schema}`, a JSON Schema the model's `object` is validated against",
  }),
  tools: z.array(z.unknown()).optional(),
  toolChoice: z.unknown().optional().openapi({ description: "`auto`, `none`, or a tool's name" }),
  temperature: z.number().optional(),
  maxOutputTokens: z.number().int().optional(),
});

export function callRoutes(app: HostApp, host: HostContext): void {
  const auth = tenantAuth(host);
  const post = createRoute({
    method: "post",
    path: "/v1/calls",
    summary: "One governed structured call (idempotent by key)",
    security: TENANT,
    middleware: [auth, keyFirst(host, "the call's own id"), jsonBody(host)] as const,
    request: { headers: z.object({ "idempotency-key": Id }), body: CallBody },
    responses: answers(
      {
        200: "`{status, operationId, replayed, object?, reason?, cause?, costUsd?}`",
        202: "`in_progress`: another request holds the key; `Location` is the call, `Retry-After` when to ask",
      },
      [400, 401, 403, 409, 410, 413, 415, 422, 503],
      { schema: CallAnswer },
    ),
  });
  const read = createRoute({
    method: "get",
    path: "/v1/calls/{key}",
    summary: "A call's stored answer",
    security: TENANT,
    middleware: [auth] as const,
    request: { params: params({ key: Id }) },
    responses: answers({ 200: "the stored answer" }, [401, 403, 404, 422], { schema: CallAnswer }),
  });
  app.openapi(post, (c) =>
    postCall(host, scopeOf(c), c.req.valid("header")["idempotency-key"], c.req.valid("json")),
  );
  app.openapi(read, (c) => getCall(host, scopeOf(c), c.req.valid("param").key));
}
