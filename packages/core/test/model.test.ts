import {
  normalizeTemperature,
  normalizeToolChoice,
  type ToolChoice,
  type ToolSpec,
  validateToolChoice,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { validationError } from "./thrown.js";

const schema = { type: "object" } as const;
const TOOLS: ToolSpec[] = [
  { name: "capture", description: "Captures a lead.", inputSchema: schema },
  { name: "lookup", description: "Looks up.", inputSchema: schema },
];

describe("normalizeToolChoice", () => {
  it("keeps absence distinct from an explicit auto", () => {
    expect(normalizeToolChoice(undefined)).toBeUndefined();
    expect(normalizeToolChoice({ type: "auto" })).toEqual({ type: "auto" });
  });

  it("accepts the closed shapes and returns frozen copies", () => {
    for (const type of ["auto", "none", "required"] as const) {
      const choice = normalizeToolChoice({ type });
      expect(choice).toEqual({ type });
      expect(Object.isFrozen(choice)).toBe(true);
    }
    const input = { type: "tool", name: "capture" };
    const choice = normalizeToolChoice(input);
    input.name = "other";
    expect(choice).toEqual({ type: "tool", name: "capture" });
    expect(Object.isFrozen(choice)).toBe(true);
  });

  it("rejects unknown fields on the simple choices", () => {
    expect(
      validationError(() => normalizeToolChoice({ type: "auto", name: "capture" })),
    ).toMatchObject({
      path: "toolChoice",
      rule: "unknown_field",
    });
    expect(validationError(() => normalizeToolChoice({ type: "none", parallel: false })).rule).toBe(
      "unknown_field",
    );
  });

  it("rejects anything outside the closed set", () => {
    const bad: unknown[] = [
      null,
      "auto",
      { type: "any" },
      { type: "function", name: "capture" },
      { type: "tool" },
      { type: "tool", name: 7 },
      { type: "tool", name: "capture", strict: true },
      {},
    ];
    for (const value of bad) {
      expect(validationError(() => normalizeToolChoice(value)).rule, JSON.stringify(value)).toBe(
        "closed",
      );
    }
  });
});

describe("validateToolChoice", () => {
  it("passes a named tool advertised exactly once", () => {
    expect(() => validateToolChoice({ type: "tool", name: "capture" }, TOOLS)).not.toThrow();
  });

  it("rejects a named tool that is not advertised", () => {
    const error = validationError(() =>
      validateToolChoice({ type: "tool", name: "delete_all" }, TOOLS),
    );
    expect(error).toMatchObject({ path: "toolChoice.name", rule: "missing" });
    expect(
      validationError(() => validateToolChoice({ type: "tool", name: "capture" }, [])).rule,
    ).toBe("missing");
  });

  it("rejects a named tool advertised more than once", () => {
    const error = validationError(() =>
      validateToolChoice({ type: "tool", name: "capture" }, [...TOOLS, TOOLS[0]!]),
    );
    expect(error).toMatchObject({ path: "toolChoice.name", rule: "ambiguous" });
  });

  it("does not check the tools for choices that name none", () => {
    const choices: (ToolChoice | undefined)[] = [
      undefined,
      { type: "auto" },
      { type: "none" },
      { type: "required" },
    ];
    for (const choice of choices) expect(() => validateToolChoice(choice, [])).not.toThrow();
  });
});

describe("normalizeTemperature", () => {
  it("accepts the closed range 0..2 and keeps absence", () => {
    expect(normalizeTemperature(undefined)).toBeUndefined();
    expect(normalizeTemperature(0)).toBe(0);
    expect(normalizeTemperature(0.7)).toBe(0.7);
    expect(normalizeTemperature(2)).toBe(2);
  });

  it("turns -0 into 0", () => {
    expect(Object.is(normalizeTemperature(-0), 0)).toBe(true);
  });

  it("rejects values outside 0..2 and non-numbers", () => {
    for (const value of [2.0001, -1, -0.0001, Number.NaN, Number.POSITIVE_INFINITY, "1", null]) {
      expect(validationError(() => normalizeTemperature(value))).toMatchObject({
        path: "temperature",
        rule: "range",
      });
    }
  });
});
