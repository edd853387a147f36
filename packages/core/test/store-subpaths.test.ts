import { auditLogContract, recallEvent, SCOPE_A } from "@alma-harness/testing";
import { describe, expect, it } from "vitest";
import { deepFreeze, StoreUnavailableError } from "../src/index.js";
import * as memory from "../src/memory/index.js";
import * as stores from "../src/stores/index.js";
import * as testing from "../src/testing/index.js";

const t = { describe, it, expect };

auditLogContract("memory (InMemoryAuditLog)", () => ({ audit: new memory.InMemoryAuditLog() }), t);

describe("the /stores, /memory and /testing subpaths", () => {
  it("/testing re-exports the in-memory stores and the store rules as the same objects", () => {
    for (const [name, value] of Object.entries(memory))
      expect((testing as Record<string, unknown>)[name], name).toBe(value);
    for (const [name, value] of Object.entries(stores))
      expect((testing as Record<string, unknown>)[name], name).toBe(value);
  });

  it("RecordingAuditLog is the in-memory audit log with assertions and failure injection on top", async () => {
    const audit = new testing.RecordingAuditLog();
    expect(audit).toBeInstanceOf(memory.InMemoryAuditLog);
    await audit.append(recallEvent());
    expect(audit.events.map((e) => e.seq)).toEqual([1]);
    const plain = new memory.InMemoryAuditLog();
    expect("events" in plain || "failAppends" in plain).toBe(false);
  });
});

describe("the shared row codecs", () => {
  it("decodes a versioned JSON column deep-frozen and refuses any other version", () => {
    const value = stores.decodeJson<{ a: { b: number[] } }>(
      stores.RECORD_VERSION,
      '{"a":{"b":[1]}}',
    );
    expect(Object.isFrozen(value.a.b)).toBe(true);
    expect(() => stores.decodeJson(stores.RECORD_VERSION + 1, "{}")).toThrow(StoreUnavailableError);
  });

  it("reads a scope back from its partition key", () => {
    const scope = stores.scopeFromKey(stores.scopeKey(SCOPE_A).key);
    expect(scope).toEqual(SCOPE_A);
    expect(Object.isFrozen(scope)).toBe(true);
  });

  it("writes a transition's columns, null where the column keeps its value", () => {
    expect(
      stores.executionChangeColumns({ state: "settled", settlementId: "op:settlement" }),
    ).toEqual({
      state: "settled",
      evidence: null,
      not_dispatched_cause: null,
      settlement_id: "op:settlement",
    });
    const cancelled = stores.executionChangeColumns({
      state: "not_dispatched",
      cause: "aborted",
      evidence: { status: "not_dispatched", cause: "aborted" },
    });
    expect(cancelled.evidence).toBe('{"cause":"aborted","status":"not_dispatched"}');
  });
});

describe("deepFreeze", () => {
  it("freezes in place, all the way down, and returns its argument", () => {
    const value = { a: [{ b: 1 }], c: "x" };
    expect(deepFreeze(value)).toBe(value);
    expect(Object.isFrozen(value) && Object.isFrozen(value.a) && Object.isFrozen(value.a[0])).toBe(
      true,
    );
    expect(deepFreeze(null)).toBe(null);
  });
});
