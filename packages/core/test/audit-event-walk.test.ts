import { SnapshotError, snapshot, TrailValueError, ValidationError } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { normalizeAuditEvent } from "../src/stores/index.js";

/** The audit event's checks run on one read of its keys and one walk of its value; what they refuse, and in which order, is unchanged. */
const cost = {
  trail: "cost",
  scope: { org: "acme", uid: "u1" },
  sessionId: "s1",
  turnId: "t1",
  callId: "c1",
  at: 1,
  operationId: "o1",
  model: "m",
  usdMicros: 0,
  settlementId: "none",
  capsCrossed: [],
};

describe("an audit event's single walk", () => {
  it("refuses a field of no trail, then a bad trail, then another trail's field, as the checks one by one did", () => {
    expect(() => normalizeAuditEvent({ ...cost, trail: "nope", text: "x" })).toThrow(
      /event takes only trail, scope/,
    );
    expect(() => normalizeAuditEvent({ ...cost, trail: "nope" })).toThrow(
      /event.trail must be one of/,
    );
    expect(() => normalizeAuditEvent({ ...cost, tool: "t" })).toThrow(
      expect.objectContaining({
        path: "event.tool",
        message: expect.stringMatching(
          /^event takes only trail, scope, sessionId, turnId, callId, at, operationId, model/,
        ),
      }),
    );
    expect(() => normalizeAuditEvent(null)).toThrow(ValidationError);
  });

  it("checks the trail rule inside a value an earlier snapshot certified, naming the field", () => {
    const refused = snapshot({ reason: "cap", detail: "a patient name" });
    expect(() => normalizeAuditEvent({ ...cost, refused })).toThrow(TrailValueError);
    expect(() => normalizeAuditEvent({ ...cost, refused })).toThrow(
      /^event\.refused\.detail: a trail holds/,
    );
    expect(() =>
      normalizeAuditEvent({ ...cost, capsCrossed: ["perTurnUsd", "two words"] }),
    ).toThrow(/^event\.capsCrossed\[1\]: /);
  });

  it("a snapshot error still wins over a trail-rule refusal earlier in the event", () => {
    const event: Record<string, unknown> = {
      ...cost,
      refused: { reason: "cap", detail: "two words" },
    };
    Object.defineProperty(event, "warning", { get: () => ({}), enumerable: true });
    expect(() => normalizeAuditEvent(event)).toThrow(SnapshotError);
  });
});
