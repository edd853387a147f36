import {
  normalizeIntent,
  normalizeModelChoice,
  SENSITIVITIES,
  sensitivityRank,
  TIERS,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { validationError } from "./thrown.js";

const CHOICE = {
  clientId: "anthropic",
  model: "sonnet",
  maxOutputTokens: 1024,
  cache: { ttl: "5m" },
};

describe("tiers and sensitivities", () => {
  it("are closed, ordered sets, lowest first", () => {
    expect(TIERS).toEqual(["fast", "balanced", "deep"]);
    expect(SENSITIVITIES).toEqual(["public", "internal", "confidential", "restricted"]);
    expect(sensitivityRank("public")).toBeLessThan(sensitivityRank("internal"));
    expect(sensitivityRank("internal")).toBeLessThan(sensitivityRank("confidential"));
    expect(sensitivityRank("confidential")).toBeLessThan(sensitivityRank("restricted"));
  });
});

describe("normalizeIntent", () => {
  it("accepts every tier and sensitivity, with or without a task", () => {
    for (const tier of TIERS) {
      for (const sensitivity of SENSITIVITIES) {
        expect(normalizeIntent({ tier, sensitivity })).toEqual({ tier, sensitivity });
      }
    }
    expect(normalizeIntent({ tier: "fast", sensitivity: "public", task: "front-desk" })).toEqual({
      tier: "fast",
      sensitivity: "public",
      task: "front-desk",
    });
  });

  it("returns a frozen copy", () => {
    const input = { tier: "deep", sensitivity: "restricted" };
    const intent = normalizeIntent(input);
    input.tier = "fast";
    expect(intent.tier).toBe("deep");
    expect(Object.isFrozen(intent)).toBe(true);
  });

  it("rejects values outside the closed sets", () => {
    expect(
      validationError(() => normalizeIntent({ tier: "ultra", sensitivity: "public" })),
    ).toMatchObject({ path: "intent.tier", rule: "closed" });
    expect(
      validationError(() => normalizeIntent({ tier: "Fast", sensitivity: "public" })).path,
    ).toBe("intent.tier");
    expect(
      validationError(() => normalizeIntent({ tier: "fast", sensitivity: "secret" })),
    ).toMatchObject({
      path: "intent.sensitivity",
      rule: "closed",
    });
    expect(validationError(() => normalizeIntent({ sensitivity: "public" })).path).toBe(
      "intent.tier",
    );
    // A prototype name is not a member of the set.
    expect(
      validationError(() => normalizeIntent({ tier: "toString", sensitivity: "public" })).path,
    ).toBe("intent.tier");
  });

  it("rejects unknown fields, naming them", () => {
    expect(
      validationError(() =>
        normalizeIntent({ tier: "fast", sensitivity: "public", model: "opus" }),
      ),
    ).toMatchObject({
      path: "intent.model",
      rule: "unknown_field",
    });
    expect(
      validationError(() =>
        normalizeIntent({ tier: "fast", sensitivity: "public", scope: {} }, "request.intent"),
      ).path,
    ).toBe("request.intent.scope");
  });

  it("bounds the task to 1-64 characters", () => {
    expect(normalizeIntent({ tier: "fast", sensitivity: "public", task: "t" }).task).toBe("t");
    expect(
      normalizeIntent({ tier: "fast", sensitivity: "public", task: "t".repeat(64) }).task,
    ).toHaveLength(64);
    for (const task of ["", "t".repeat(65), 5]) {
      expect(
        validationError(() => normalizeIntent({ tier: "fast", sensitivity: "public", task })),
      ).toMatchObject({
        path: "intent.task",
        rule: "string_1_64",
      });
    }
  });

  it("rejects non-objects", () => {
    for (const value of [null, undefined, "fast", ["fast", "public"]])
      expect(validationError(() => normalizeIntent(value)).rule).toBe("object");
  });

  it("reads each field once: a getter cannot pass the check with one value and return another", () => {
    let reads = 0;
    const intent = {
      sensitivity: "public",
      get tier() {
        reads += 1;
        return reads === 1 ? "fast" : "unlimited";
      },
    };
    const result = normalizeIntent(intent);
    expect(result.tier).toBe("fast");
    expect(reads).toBe(1);
  });
});

describe("normalizeModelChoice", () => {
  it("accepts a full choice and returns a frozen copy", () => {
    const input = { ...CHOICE, reasoning: "high", serviceTier: "priority", cache: { ttl: "1h" } };
    const choice = normalizeModelChoice(input);
    expect(choice).toEqual({
      clientId: "anthropic",
      model: "sonnet",
      maxOutputTokens: 1024,
      cache: { ttl: "1h" },
      reasoning: "high",
      serviceTier: "priority",
    });
    expect(Object.isFrozen(choice)).toBe(true);
    expect(Object.isFrozen(choice.cache)).toBe(true);
    input.cache.ttl = "5m";
    expect(choice.cache).toEqual({ ttl: "1h" });
  });

  it("takes a tail TTL of its own, never longer than the prefix's (issue 19)", () => {
    expect(normalizeModelChoice({ ...CHOICE, cache: { ttl: "1h", tailTtl: "5m" } }).cache).toEqual({
      ttl: "1h",
      tailTtl: "5m",
    });
    expect(normalizeModelChoice({ ...CHOICE, cache: { ttl: "1h", tailTtl: "1h" } }).cache).toEqual({
      ttl: "1h",
    });
    expect(
      validationError(() =>
        normalizeModelChoice({ ...CHOICE, cache: { ttl: "5m", tailTtl: "1h" } }),
      ).path,
    ).toBe("choice.cache.tailTtl");
    expect(
      validationError(() =>
        normalizeModelChoice({ ...CHOICE, cache: { ttl: "1h", tailTtl: "24h" } }),
      ).path,
    ).toBe("choice.cache.tailTtl");
  });

  it("accepts cache off", () => {
    expect(normalizeModelChoice({ ...CHOICE, cache: false }).cache).toBe(false);
  });

  it("holds reasoning, service tier and cache ttl to their closed sets", () => {
    for (const reasoning of ["low", "medium", "high"])
      expect(normalizeModelChoice({ ...CHOICE, reasoning }).reasoning).toBe(reasoning);
    for (const serviceTier of ["standard", "priority", "flex", "batch"]) {
      expect(normalizeModelChoice({ ...CHOICE, serviceTier }).serviceTier).toBe(serviceTier);
    }
    expect(validationError(() => normalizeModelChoice({ ...CHOICE, reasoning: "max" })).path).toBe(
      "choice.reasoning",
    );
    expect(
      validationError(() => normalizeModelChoice({ ...CHOICE, serviceTier: "scale" })).path,
    ).toBe("choice.serviceTier");
    for (const cache of [true, undefined, null, { ttl: "24h" }, {}, "5m"]) {
      expect(validationError(() => normalizeModelChoice({ ...CHOICE, cache })).path).toBe(
        "choice.cache",
      );
    }
  });

  it("requires a client, a model and a positive integer output ceiling", () => {
    expect(validationError(() => normalizeModelChoice({ ...CHOICE, clientId: "" })).path).toBe(
      "choice.clientId",
    );
    expect(validationError(() => normalizeModelChoice({ ...CHOICE, model: undefined })).path).toBe(
      "choice.model",
    );
    for (const maxOutputTokens of [0, -1, 1.5, Number.NaN, "1024"]) {
      expect(validationError(() => normalizeModelChoice({ ...CHOICE, maxOutputTokens })).path).toBe(
        "choice.maxOutputTokens",
      );
    }
    expect(validationError(() => normalizeModelChoice(null)).path).toBe("choice");
  });

  it("rejects unknown fields rather than silently dropping them", () => {
    // A misspelled control would otherwise vanish and the call run at the default tier.
    expect(
      validationError(() => normalizeModelChoice({ ...CHOICE, service_tier: "flex" })),
    ).toMatchObject({
      path: "choice.service_tier",
      rule: "unknown_field",
    });
    expect(validationError(() => normalizeModelChoice({ ...CHOICE, temperature: 0.2 })).path).toBe(
      "choice.temperature",
    );
    expect(
      validationError(() =>
        normalizeModelChoice({ ...CHOICE, cache: { ttl: "5m", breakpoints: 4 } }),
      ),
    ).toMatchObject({
      path: "choice.cache.breakpoints",
      rule: "unknown_field",
    });
  });

  it("reads each field once", () => {
    let reads = 0;
    const choice = {
      ...CHOICE,
      get serviceTier() {
        reads += 1;
        return reads === 1 ? "standard" : "bogus";
      },
    };
    expect(normalizeModelChoice(choice).serviceTier).toBe("standard");
    expect(reads).toBe(1);
  });
});
