import { ValidationError } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { refusalCategory } from "../src/index.js";
import { normalizeAuditEvent, normalizeReceivedEvidence } from "../src/stores/index.js";

/** Issue 19: the closed records the stores accept for refusals and the serving upstream. */
const routing = {
  trail: "routing",
  scope: { org: "acme", uid: "u1" },
  sessionId: "s1",
  turnId: "t1",
  callId: "t1:main:1",
  at: 1,
  kind: "main",
  tier: "balanced",
  sensitivity: "internal",
  clientId: "c",
  model: "m",
  cacheTtl: "off",
  servedTier: "standard",
};

describe("refusal categories and upstreams in records", () => {
  it("a provider's refusal category maps to the closed vocabulary; anything else is unspecified", () => {
    for (const c of ["cyber", "bio", "frontier_llm", "reasoning_extraction", "general_harms"])
      expect(refusalCategory(c)).toBe(c);
    for (const c of [null, undefined, "", "new_one", 3, "Cyber"])
      expect(refusalCategory(c)).toBe("unspecified");
  });

  it("the served routing record takes a closed refusal and an upstream slug, nothing else", () => {
    expect(
      normalizeAuditEvent({ ...routing, refusal: "cyber", upstream: "google-vertex" }),
    ).toMatchObject({ refusal: "cyber", upstream: "google-vertex" });
    expect(() => normalizeAuditEvent({ ...routing, refusal: "This request was declined" })).toThrow(
      ValidationError,
    );
    expect(() => normalizeAuditEvent({ ...routing, upstream: "Google Vertex" })).toThrow(
      /upstream/,
    );
  });

  it("received evidence may name its upstream", () => {
    const usage = { inputTokens: 1, outputTokens: 1 };
    expect(normalizeReceivedEvidence({ status: "known", usage, upstream: "anthropic" })).toEqual({
      status: "known",
      usage,
      upstream: "anthropic",
    });
    expect(
      normalizeReceivedEvidence({ status: "unpriced", usage, reason: "r", upstream: "anthropic" }),
    ).toEqual({ status: "unpriced", usage, reason: "r", upstream: "anthropic" });
    expect(() => normalizeReceivedEvidence({ status: "unknown", upstream: "anthropic" })).toThrow(
      ValidationError,
    );
    expect(() => normalizeReceivedEvidence({ status: "known", usage, upstream: "" })).toThrow(
      /upstream/,
    );
  });
});
