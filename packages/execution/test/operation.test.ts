import { describe, expect, it } from "vitest";
import { CHOICE, client, identity, options, REQUEST, setup } from "./fixtures.js";

describe("CallIdentity.operation: a governed call outside a turn", () => {
  it("puts the operation, attempt and call ids on both routing records and its egress on the access trail, before the dispatch", async () => {
    const s = setup();
    let trailsAtEgress: string[] = [];
    const c = client(() => {
      trailsAtEgress = s.audit.events.map((e) => e.trail);
    });
    const id = identity(1, {
      kind: "single",
      operationId: "op1:a1:c1",
      operation: { operationId: "op1", attemptId: "op1:a1" },
    });
    expect((await s.calls.run(id, c, CHOICE, REQUEST, options(s.account))).status).toBe("settled");
    expect(trailsAtEgress).toEqual(["routing", "access"]);
    const routing = s.audit.events.filter((e) => e.trail === "routing");
    expect(routing).toHaveLength(2);
    for (const e of routing)
      expect(e).toMatchObject({
        kind: "single",
        operationId: "op1",
        attemptId: "op1:a1",
        callId: "op1:a1:c1",
      });
    expect(s.audit.events.filter((e) => e.trail === "access")).toEqual([
      expect.objectContaining({
        tool: "model",
        resource: "provider:test:messages:1",
        action: "egress",
        operationId: "op1",
        attemptId: "op1:a1",
        callId: "op1:a1:c1",
      }),
    ]);
  });

  it("a turn's call carries none of them and writes no access record", async () => {
    const s = setup();
    await s.calls.run(identity(), client(), CHOICE, REQUEST, options(s.account));
    expect(s.audit.events.some((e) => e.trail === "access")).toBe(false);
    for (const e of s.audit.events.filter((x) => x.trail === "routing")) {
      expect(e).not.toHaveProperty("operationId");
      expect(e).not.toHaveProperty("attemptId");
    }
  });

  it("an access record that cannot be written ends the claim not dispatched: nothing is sent", async () => {
    const s = setup({
      auditFail: (event) => (event.trail === "access" ? new Error("audit sink down") : undefined),
    });
    const c = client();
    const id = identity(1, {
      kind: "single",
      operationId: "op2:a1:c1",
      operation: { operationId: "op2", attemptId: "op2:a1" },
    });
    await expect(s.calls.run(id, c, CHOICE, REQUEST, options(s.account))).rejects.toMatchObject({
      uncertainCause: "audit",
      attempt: "unsent",
    });
    expect(c.streamed).toHaveLength(0);
    expect((await s.journal.get(id.scope, "op2:a1:c1"))?.state).toBe("not_dispatched");
  });
});
