import {
  AlmaError,
  InvalidIdError,
  InvalidScopeError,
  normalizeScope,
  scopePath,
  validateId,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";

describe("normalizeScope", () => {
  it("returns a frozen copy with exactly org and uid", () => {
    const input = { org: "clinic-42", uid: "patient_7" };
    const scope = normalizeScope(input);
    expect(scope).toEqual({ org: "clinic-42", uid: "patient_7" });
    expect(Object.isFrozen(scope)).toBe(true);
    input.org = "other";
    expect(scope.org).toBe("clinic-42");
  });

  it("accepts parts of 1 and 64 characters from the closed set", () => {
    expect(normalizeScope({ org: "a", uid: "1" })).toEqual({ org: "a", uid: "1" });
    const longest = `${"Az09_.-".repeat(9)}x`;
    expect(longest).toHaveLength(64);
    expect(normalizeScope({ org: longest, uid: longest }).org).toBe(longest);
    expect(normalizeScope({ org: "-dash", uid: "_under.score" })).toEqual({
      org: "-dash",
      uid: "_under.score",
    });
  });

  it("rejects empty and 65-character parts", () => {
    expect(() => normalizeScope({ org: "", uid: "u" })).toThrow(InvalidScopeError);
    expect(() => normalizeScope({ org: "o", uid: "" })).toThrow(InvalidScopeError);
    expect(() => normalizeScope({ org: "o".repeat(65), uid: "u" })).toThrow(InvalidScopeError);
    expect(() => normalizeScope({ org: "o", uid: "u".repeat(65) })).toThrow(InvalidScopeError);
  });

  it("rejects characters that could escape a path or a key", () => {
    for (const bad of [
      "a/b",
      "..",
      ".hidden",
      "a b",
      "a\\b",
      "a:b",
      "a%2F",
      "ñ",
      "a\u0000",
      "a\n",
      "*",
      "😀",
    ]) {
      expect(() => normalizeScope({ org: bad, uid: "u" }), JSON.stringify(bad)).toThrow(
        InvalidScopeError,
      );
      expect(() => normalizeScope({ org: "o", uid: bad }), JSON.stringify(bad)).toThrow(
        InvalidScopeError,
      );
    }
  });

  it("rejects unknown fields, naming what is expected and never the field sent", () => {
    expect(() => normalizeScope({ org: "o", uid: "u", role: "admin" })).toThrow(
      /takes only org and uid/,
    );
    expect(() => normalizeScope({ org: "o", uid: "u", role: "admin" })).not.toThrow(/role/);
  });

  it("rejects missing, non-string and accessor parts", () => {
    expect(() => normalizeScope({ org: "o" })).toThrow(/scope\.uid/);
    expect(() => normalizeScope({ org: 1, uid: "u" })).toThrow(/scope\.org/);
    let reads = 0;
    const accessor = {
      uid: "u",
      get org() {
        reads += 1;
        return "o";
      },
    };
    expect(() => normalizeScope(accessor)).toThrow(InvalidScopeError);
    expect(reads).toBe(0);
  });

  it("rejects anything that is not an object", () => {
    for (const value of [null, undefined, "o/u", ["o", "u"], 1])
      expect(() => normalizeScope(value)).toThrow(InvalidScopeError);
  });

  it("throws a typed error with a stable code", () => {
    try {
      normalizeScope({ org: "a/b", uid: "u" });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(AlmaError);
      expect((error as InvalidScopeError).code).toBe("invalid_scope");
      expect((error as InvalidScopeError).name).toBe("InvalidScopeError");
    }
  });
});

describe("scopePath", () => {
  it("is org/uid", () => {
    expect(scopePath({ org: "clinic", uid: "p1" })).toBe("clinic/p1");
  });

  it("validates before building the path, so no two scopes share one", () => {
    expect(() => scopePath({ org: "a/b", uid: "c" })).toThrow(InvalidScopeError);
    expect(() => scopePath({ org: "a", uid: "b/c" })).toThrow(InvalidScopeError);
  });
});

describe("validateId", () => {
  it("accepts 1-200 printable ASCII characters without spaces", () => {
    expect(validateId("sessionId", "s")).toBe("s");
    expect(validateId("sessionId", "x".repeat(200))).toHaveLength(200);
    expect(validateId("key", "!~:/#@")).toBe("!~:/#@");
  });

  it("rejects empty, too long, spaces, control and non-ASCII characters, and non-strings", () => {
    for (const bad of ["", "x".repeat(201), "a b", "tab\t", "é", "\u007f", 12, null]) {
      expect(() => validateId("sessionId", bad), JSON.stringify(bad)).toThrow(InvalidIdError);
    }
  });

  it("names the field", () => {
    expect(() => validateId("idempotencyKey", "")).toThrow(/idempotencyKey/);
  });
});
