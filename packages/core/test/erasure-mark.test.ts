import { describe, expect, it } from "vitest";
import {
  erasedSessionMark,
  InvalidIdError,
  InvalidScopeError,
  isErasedMark,
  sessionMarker,
  TrailValueError,
} from "@alma-harness/core";

describe("erasedSessionMark: the pseudonymous id an erased session's tombstones and receipts carry", () => {
  const scope = { org: "clinic-a", uid: "u1" };

  it("is `e1_` and 64 hex digits, the same for the same scope and session, and holds neither", () => {
    const mark = erasedSessionMark(scope, "+15550001001");
    expect(mark).toMatch(/^e1_[0-9a-f]{64}$/);
    expect(erasedSessionMark({ org: "clinic-a", uid: "u1" }, "+15550001001")).toBe(mark);
    expect(mark).not.toContain("15550001001");
    expect(mark).not.toContain("clinic-a");
    expect(isErasedMark(mark)).toBe(true);
  });

  it("differs by session and by scope (org or uid), so no two sessions share a tombstone", () => {
    const marks = new Set([
      erasedSessionMark(scope, "s1"),
      erasedSessionMark(scope, "s2"),
      erasedSessionMark({ org: "clinic-b", uid: "u1" }, "s1"),
      erasedSessionMark({ org: "clinic-a", uid: "u2" }, "s1"),
    ]);
    expect(marks.size).toBe(4);
  });

  it("refuses a bad scope or id with the typed errors; isErasedMark is false for an ordinary id", () => {
    expect(() => erasedSessionMark({ org: "", uid: "u1" }, "s1")).toThrow(InvalidScopeError);
    expect(() => erasedSessionMark(scope, "has space")).toThrow(InvalidIdError);
    expect(isErasedMark("+15550001001")).toBe(false);
    expect(isErasedMark(`e1_${"0".repeat(63)}`)).toBe(false);
    expect(isErasedMark(`e1_${"A".repeat(64)}`)).toBe(false);
  });

  it("under a trail key is `e2_` and a keyed HMAC: unlike the unkeyed digest, it cannot be recomputed from a guessed id", () => {
    const key = "a-deployment-trail-key-of-32-bytes!!";
    const keyed = erasedSessionMark(scope, "+15550001001", key);
    expect(keyed).toMatch(/^e2_[0-9a-f]{32}$/);
    expect(isErasedMark(keyed)).toBe(true);
    expect(keyed).not.toContain(erasedSessionMark(scope, "+15550001001").slice(3, 35));
    expect(
      erasedSessionMark(scope, "+15550001001", "another-deployment-key-of-32-bytes!!"),
    ).not.toBe(keyed);
    expect(sessionMarker(key)(scope, "+15550001001")).toBe(keyed);
    expect(sessionMarker()(scope, "+15550001001")).toBe(erasedSessionMark(scope, "+15550001001"));
    expect(() => sessionMarker("short")).toThrow(TrailValueError);
    expect(isErasedMark(`e2_${"0".repeat(31)}`)).toBe(false);
  });
});
