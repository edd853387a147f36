import {
  AlmaError,
  FAILURE_KINDS,
  type FailureKind,
  failureOf,
  ProviderError,
  REJECTION_PROVIDERS,
  type RejectionProof,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";

const RETRYABLE_BY_DEFAULT: Record<FailureKind, boolean> = {
  rate_limited: true,
  overloaded: true,
  server: true,
  network: true,
  timeout: true,
  context_window: false,
  invalid_request: false,
  unsupported: false,
  auth: false,
  not_found: false,
  cancelled: false,
  stream_invalid: false,
  stream_torn: false,
  provider_error: false,
  unknown: false,
};

describe("FAILURE_KINDS", () => {
  it("is the documented closed vocabulary", () => {
    expect([...FAILURE_KINDS].sort()).toEqual(Object.keys(RETRYABLE_BY_DEFAULT).sort());
    expect(new Set(FAILURE_KINDS).size).toBe(FAILURE_KINDS.length);
  });
});

describe("ProviderError", () => {
  for (const kind of FAILURE_KINDS) {
    it(`defaults retryable for ${kind} to ${RETRYABLE_BY_DEFAULT[kind]}`, () => {
      const error = new ProviderError("boom", { kind, provider: "anthropic" });
      expect(error.retryable).toBe(RETRYABLE_BY_DEFAULT[kind]);
      expect(error.kind).toBe(kind);
      expect(error.code).toBe(`provider_${kind}`);
    });
  }

  it("lets the adapter override the default verdict", () => {
    expect(
      new ProviderError("x", { kind: "rate_limited", provider: "openai", retryable: false })
        .retryable,
    ).toBe(false);
    expect(
      new ProviderError("x", { kind: "invalid_request", provider: "openai", retryable: true })
        .retryable,
    ).toBe(true);
  });

  it("is an AlmaError that keeps status, retry-after, provider and cause", () => {
    const cause = new Error("socket hang up");
    const error = new ProviderError("rate limited", {
      kind: "rate_limited",
      provider: "openai",
      status: 429,
      retryAfterMs: 1500,
      cause,
    });
    expect(error).toBeInstanceOf(AlmaError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("ProviderError");
    expect(error).toMatchObject({
      provider: "openai",
      status: 429,
      retryAfterMs: 1500,
      message: "rate limited",
    });
    expect(error.cause).toBe(cause);
  });

  it("leaves status and retry-after absent when not given", () => {
    const error = new ProviderError("offline", { kind: "network", provider: "openai" });
    expect(error.status).toBeUndefined();
    expect(error.retryAfterMs).toBeUndefined();
    expect(error.rejection).toBeUndefined();
  });
});

describe("RejectionProof", () => {
  it("binds each proof kind to one provider", () => {
    expect(REJECTION_PROVIDERS).toEqual({
      anthropic_rate_limit_v1: "anthropic",
      anthropic_overloaded_v1: "anthropic",
      openai_rate_limit_v1: "openai",
    });
    expect(Object.isFrozen(REJECTION_PROVIDERS)).toBe(true);
  });

  it("is accepted from its own provider and copied frozen", () => {
    const proof: RejectionProof = {
      kind: "anthropic_overloaded_v1",
      provider: "anthropic",
      status: 529,
    };
    const error = new ProviderError("overloaded", {
      kind: "overloaded",
      provider: "anthropic",
      status: 529,
      rejection: proof,
    });
    expect(error.rejection).toEqual(proof);
    expect(error.rejection).not.toBe(proof);
    expect(Object.isFrozen(error.rejection)).toBe(true);
    (proof as { status: number }).status = 200;
    expect(error.rejection?.status).toBe(529);

    const openai = new ProviderError("rate limited", {
      kind: "rate_limited",
      provider: "openai",
      status: 429,
      rejection: { kind: "openai_rate_limit_v1", provider: "openai", status: 429 },
    });
    expect(openai.rejection?.kind).toBe("openai_rate_limit_v1");
  });

  it("throws when the error's provider is not the proof's bound provider", () => {
    expect(
      () =>
        new ProviderError("rate limited", {
          kind: "rate_limited",
          provider: "openai",
          rejection: { kind: "anthropic_rate_limit_v1", provider: "openai", status: 429 },
        }),
    ).toThrow(TypeError);
    expect(
      () =>
        new ProviderError("rate limited", {
          kind: "rate_limited",
          provider: "openrouter",
          rejection: { kind: "openai_rate_limit_v1", provider: "openrouter", status: 429 },
        }),
    ).toThrow(TypeError);
  });

  it("throws when the proof claims a different provider than the error", () => {
    expect(
      () =>
        new ProviderError("rate limited", {
          kind: "rate_limited",
          provider: "anthropic",
          rejection: { kind: "anthropic_rate_limit_v1", provider: "openai", status: 429 },
        }),
    ).toThrow(TypeError);
  });

  it("throws for a proof kind that does not exist", () => {
    expect(
      () =>
        new ProviderError("x", {
          kind: "server",
          provider: "anthropic",
          rejection: {
            kind: "anthropic_server_v1",
            provider: "anthropic",
            status: 500,
          } as unknown as RejectionProof,
        }),
    ).toThrow(TypeError);
  });
});

describe("failureOf", () => {
  it("reports a provider error as data with its verdict", () => {
    const failure = failureOf(
      new ProviderError("slow down", { kind: "rate_limited", provider: "openai", status: 429 }),
    );
    expect(failure).toEqual({
      kind: "rate_limited",
      message: "slow down",
      retryable: true,
      provider: "openai",
      status: 429,
    });
  });

  it("reports anything else as unknown and not retryable", () => {
    expect(failureOf(new Error("disk full"))).toEqual({
      kind: "unknown",
      message: "disk full",
      retryable: false,
    });
    expect(failureOf("a string")).toEqual({
      kind: "unknown",
      message: "a string",
      retryable: false,
    });
  });

  it("does not inherit retryable from an AlmaError that is not a provider error", () => {
    expect(failureOf(new AlmaError("store_unavailable", "x", { retryable: true })).retryable).toBe(
      false,
    );
  });
});
