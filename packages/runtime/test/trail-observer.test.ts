import type { AuditEvent } from "@alma-harness/core";
import { InMemoryAuditLog } from "@alma-harness/core/memory";
import { observedAudit } from "@alma-harness/runtime";
import { describe, expect, it } from "vitest";

const event = (turnId: string, extra: Record<string, unknown> = {}) =>
  ({
    trail: "lifecycle",
    scope: { org: "org-a", uid: "u-1" },
    sessionId: "sp_1",
    turnId,
    at: 1_767_225_600_000,
    action: "turn.started",
    ...extra,
  }) as unknown as AuditEvent;

describe("observedAudit: what the runtime's onTrail sees", () => {
  it("every record the log accepted, after its append, in order", async () => {
    const seen: string[] = [];
    const inner = new InMemoryAuditLog();
    const audit = observedAudit(inner, (e) => seen.push(String(e.turnId)));
    await audit.append(event("t1"));
    await audit.append(event("t2"));
    expect(seen).toEqual(["t1", "t2"]);
    expect((await audit.query({ org: "org-a", uid: "u-1" })).items).toHaveLength(2);
  });

  it("a record the log refused is never observed, and the refusal stands", async () => {
    const seen: unknown[] = [];
    const audit = observedAudit(new InMemoryAuditLog(), (e) => seen.push(e));
    await expect(audit.append(event("t1", { action: "a patient's name" }))).rejects.toThrow();
    expect(seen).toEqual([]);
  });

  it("an observer that throws never fails the append", async () => {
    const inner = new InMemoryAuditLog();
    const audit = observedAudit(inner, () => {
      throw new Error("exporter bug");
    });
    await expect(audit.append(event("t1"))).resolves.toBeUndefined();
    expect((await inner.query({ org: "org-a", uid: "u-1" })).items).toHaveLength(1);
  });
});
