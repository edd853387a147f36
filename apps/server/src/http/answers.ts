import { z } from "@hono/zod-openapi";

/**
 * The answers' shapes for `/openapi.json`: what `views.ts` (a turn) and `callBody` (a call) send.
 * Documentation only: the handlers build these bodies, and the tests pin them.
 */

export const TurnView = z
  .object({
    status: z.enum(["completed", "in_progress", "reconciliation_required", "awaiting_approval"]),
    rootKey: z.string().openapi({ description: "the turn's key: `GET /v1/turns/{rootKey}`" }),
    replayed: z.boolean().optional().openapi({ description: "a retry answered from the store" }),
    text: z.string().optional().openapi({ description: "the reply's text, joined" }),
    delivered: z.array(z.string()).optional().openapi({
      description: "what the terminal `send_message` tool delivered",
    }),
    notice: z.string().optional().openapi({
      description: "the host's own message when there is no usable answer (or a person decides)",
    }),
    toolCalls: z.array(z.object({ name: z.string(), isError: z.boolean() })).optional(),
    stopReason: z.string().nullable().optional(),
    terminalReason: z.string().optional(),
    costUsd: z.string().optional().openapi({ description: "the turn's cost, in dollars" }),
    warnings: z.array(z.string()).optional(),
    asks: z
      .array(z.object({ askId: z.string(), tool: z.string(), expiresAt: z.number() }))
      .optional()
      .openapi({ description: "a parked turn's undecided asks (no input, no decision token)" }),
    expiresAt: z.number().optional(),
    triage: z.looseObject({}).optional().openapi({ description: "with `ALMA_TRIAGE=on`" }),
  })
  .openapi("TurnView");

export const TURN_EVENTS =
  "SSE: `text`, `tool`, `usage` and `permission` events as they settle, then one `result` (the JSON " +
  "answer, with `httpStatus`) or `error`; text, asks and the result carry resumable ids";

export const CallAnswer = z
  .object({
    status: z.enum(["completed", "invalid", "refused", "reconciliation_required", "in_progress"]),
    operationId: z.string(),
    replayed: z.boolean().optional(),
    object: z.unknown().optional().openapi({ description: "the validated object (completed)" }),
    stopReason: z.string().nullable().optional(),
    costUsd: z.string().optional().openapi({ description: "what it cost (completed, invalid)" }),
    reason: z.string().optional().openapi({ description: "why there is no object" }),
    problem: z.unknown().optional(),
    cap: z.unknown().optional(),
    missing: z.unknown().optional(),
    cause: z.string().optional().openapi({
      description: "`reconciliation_required`: never send it again",
    }),
  })
  .openapi("CallAnswer");
