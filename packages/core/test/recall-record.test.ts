import { RECALL_DEGRADED_TIERS, ValidationError } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { normalizeAuditEvent } from "../src/stores/index.js";

/** Issue 18: the recall record holds counts, sizes and closed tiers only. */
const recall = {
  trail: "recall",
  scope: { org: "acme", uid: "u1" },
  sessionId: "sp_1",
  turnId: "t1",
  at: 1,
  source: "memory",
  items: 2,
};

describe("the recall record", () => {
  it("takes counts, sizes and the closed degraded tiers", () => {
    const full = {
      ...recall,
      episodes: 1,
      facts: 1,
      characters: 120,
      estimatedTokens: 30,
      attempts: 2,
      dropped: 0,
      degradedTiers: ["unavailable", "filtered"],
    };
    expect(normalizeAuditEvent(full)).toEqual(full);
    expect(normalizeAuditEvent(recall)).toEqual(recall);
    expect(RECALL_DEGRADED_TIERS).toEqual(["unavailable", "invalid", "filtered", "truncated"]);
  });

  it("refuses a tier outside the vocabulary, a repeated tier, text in place of a count, and fields it does not define", () => {
    for (const bad of [
      { degradedTiers: ["slow"] },
      { degradedTiers: ["unavailable", "unavailable"] },
      { degradedTiers: "unavailable" },
      { characters: -1 },
      { estimatedTokens: 1.5 },
      { items: "2" },
      { facts: "allergic to penicillin" },
    ]) {
      expect(() => normalizeAuditEvent({ ...recall, ...bad })).toThrow(ValidationError);
    }
    for (const field of ["query", "text", "summary"])
      expect(() => normalizeAuditEvent({ ...recall, [field]: "penicillin" })).toThrow();
  });
});
