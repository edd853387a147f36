import type { AuditEvent } from "@alma-harness/core";

/**
 * Trail sequences as the engine appends them (the W2 turn below is copied from a real turn's
 * `RecordingAuditLog`: a tool call, then an answer), with the fields the spans read.
 */
export const AT = 1_767_225_600_000;
const scope = { org: "clinic-a", uid: "patient-42" };
const sessionId = "sp_54ae3a302cea2457428bea8fefc6c41b";

/** Events of one turn; fields as the stores hold them (trail values are plain strings there). */
export function events(turnId: string, list: readonly Record<string, unknown>[]): AuditEvent[] {
  return list.map((e) => ({ scope, sessionId, turnId, ...e }) as AuditEvent);
}

/** The routing, request and cost records of one settled main call. */
export function modelCall(turnId: string, step: number, at: number, usdMicros = 105) {
  const callId = `${turnId}:main:${step}`;
  const route = {
    trail: "routing",
    callId,
    kind: "main",
    tier: "balanced",
    sensitivity: "internal",
    clientId: "anthropic",
    model: "claude-sonnet-4-5",
    cacheTtl: "off",
  } as const;
  return events(turnId, [
    { ...route, at },
    { trail: "lifecycle", callId, at, action: "model.request", step, contextVersion: 1 },
    {
      trail: "cost",
      callId,
      at: at + 40,
      operationId: callId,
      model: "claude-sonnet-4-5",
      usdMicros,
      settlementId: `${callId}:settlement`,
      inputTokens: 1200,
      outputTokens: 35,
      capsCrossed: [],
    },
    { ...route, at: at + 40, servedTier: "standard" },
  ]);
}

/** A W2 turn: a model call, the `book` tool allowed by the controller, a closing model call. */
export function w2(turnId = "turn-1"): AuditEvent[] {
  return [
    ...events(turnId, [{ trail: "lifecycle", at: AT, action: "turn.started" }]),
    ...modelCall(turnId, 1, AT + 10),
    ...events(turnId, [
      { trail: "lifecycle", callId: "c1", at: AT + 60, action: "tool.call", detail: "book" },
      {
        trail: "policy",
        callId: "c1",
        at: AT + 60,
        tool: "book",
        authorization: { action: "book", subject: "h_2b9c" },
        action: "intent",
      },
      {
        trail: "policy",
        callId: "c1",
        at: AT + 61,
        tool: "book",
        action: "decision",
        decision: "allow",
        by: "operator",
        rule: "controller",
      },
      { trail: "lifecycle", callId: "c1", at: AT + 70, action: "tool.result", detail: "ok" },
    ]),
    ...modelCall(turnId, 2, AT + 80),
    ...events(turnId, [
      { trail: "lifecycle", at: AT + 130, action: "turn.completed", detail: "answered" },
    ]),
  ];
}
