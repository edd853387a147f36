import { describe, expect, it } from "vitest";
import {
  InvalidIdError,
  isTrailShaped,
  processTrailKey,
  resolveTrailKey,
  sessionPseudonym,
  TRAIL_KEY_MIN_BYTES,
  TRAIL_VALUE_MAX,
  TrailKey,
  trailHash,
  trailId,
  trailJoin,
  trailKey,
  trailKind,
  TrailValueError,
} from "@alma-harness/core";

const KEY = "a-trail-key-of-at-least-thirty-two-bytes";
const A = { org: "clinic-a", uid: "u1" };
const B = { org: "clinic-b", uid: "u1" };

function refused(run: () => unknown, rule: TrailValueError["rule"]): TrailValueError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(TrailValueError);
    expect((error as TrailValueError).code).toBe("invalid_trail_value");
    expect((error as TrailValueError).rule).toBe(rule);
    return error as TrailValueError;
  }
  throw new Error("expected a TrailValueError");
}

describe("TrailValue: only identifiers, kinds, counts, sizes and keyed hashes", () => {
  it("trailId takes 1-200 printable ASCII characters without spaces, at the limit and not one over", () => {
    expect(trailId("turn-1")).toBe("turn-1");
    expect(trailId("x".repeat(TRAIL_VALUE_MAX))).toHaveLength(200);
    refused(() => trailId("x".repeat(TRAIL_VALUE_MAX + 1)), "identifier");
    for (const hostile of [
      "",
      "Ana García",
      "two words",
      "line\nbreak",
      "tab\there",
      "nul\u0000",
      "ñandú",
      "emoji🙂",
    ])
      refused(() => trailId(hostile), "identifier");
    refused(() => trailId(42 as unknown as string), "identifier");
  });

  it("the error names the rule, never the value", () => {
    const error = refused(() => trailId("Zelda Quixote"), "identifier");
    expect(error.message).not.toContain("Zelda");
  });

  it("trailKind takes a vocabulary word: a letter, then up to 127 of [A-Za-z0-9_.:-]", () => {
    expect(trailKind("kernel.registered")).toBe("kernel.registered");
    expect(trailKind("call:main:invalid:none:text_delta")).toBe(
      "call:main:invalid:none:text_delta",
    );
    expect(trailKind(`a${"b".repeat(127)}`)).toHaveLength(128);
    for (const hostile of [
      `a${"b".repeat(128)}`,
      "1abc",
      "_x",
      "has space",
      "slash/y",
      "quote'",
      "new\nline",
      "",
    ])
      refused(() => trailKind(hostile), "kind");
  });

  it("trailJoin joins trail values and counts with `:`; a count is a non-negative safe integer", () => {
    expect(trailJoin(trailKind("provider"), trailId("anthropic"), trailKind("results"), 3)).toBe(
      "provider:anthropic:results:3",
    );
    expect(trailJoin(trailKind("bytes"), 0)).toBe("bytes:0");
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.MAX_SAFE_INTEGER + 1])
      refused(() => trailJoin(trailKind("n"), bad), "count");
    refused(() => trailJoin("free text" as never), "identifier");
    refused(() => trailJoin(trailId("x".repeat(150)), trailId("y".repeat(60))), "identifier");
  });

  it("isTrailShaped is the store's check: the identifier shape", () => {
    expect(isTrailShaped("sp_0123")).toBe(true);
    expect(isTrailShaped("a b")).toBe(false);
    expect(isTrailShaped(undefined)).toBe(false);
  });
});

describe("the trail key and the keyed values", () => {
  it("key material is at least 32 bytes (a string counts its UTF-8 bytes), validated once", () => {
    expect(trailKey(KEY)).toBeInstanceOf(TrailKey);
    expect(trailKey(new Uint8Array(TRAIL_KEY_MIN_BYTES))).toBeInstanceOf(TrailKey);
    refused(() => trailKey(new Uint8Array(TRAIL_KEY_MIN_BYTES - 1)), "key");
    refused(() => trailKey("x".repeat(31)), "key");
    expect(trailKey("é".repeat(16))).toBeInstanceOf(TrailKey); // 32 bytes in UTF-8
    refused(() => trailKey(12345 as unknown as string), "key");
    const key = trailKey(KEY);
    expect(trailKey(key)).toBe(key);
  });

  it("a key never shows its bytes: not in JSON, not among its properties", () => {
    const key = trailKey(KEY);
    expect(JSON.stringify({ key })).toBe('{"key":"[TrailKey]"}');
    expect(Object.keys(key)).toEqual([]);
    expect(Object.isFrozen(key)).toBe(true);
  });

  it("without a key the per-process key is used, the same one every time", () => {
    expect(resolveTrailKey(undefined)).toBe(processTrailKey());
    expect(resolveTrailKey(undefined)).toBe(resolveTrailKey(undefined));
  });

  it("the session pseudonym is keyed, deterministic and scope-bound", () => {
    const p = sessionPseudonym(KEY, A, "+5511987654321");
    expect(p).toMatch(/^sp_[0-9a-f]{32}$/);
    expect(sessionPseudonym(trailKey(KEY), A, "+5511987654321")).toBe(p);
    // Another tenant, another person, another key: another pseudonym.
    expect(sessionPseudonym(KEY, B, "+5511987654321")).not.toBe(p);
    expect(sessionPseudonym(KEY, { org: "clinic-a", uid: "u2" }, "+5511987654321")).not.toBe(p);
    expect(sessionPseudonym(`${KEY}!`, A, "+5511987654321")).not.toBe(p);
    expect(p).not.toContain("987654321");
    expect(() => sessionPseudonym(KEY, A, "has space")).toThrow(InvalidIdError);
  });

  it("scope parts cannot be shifted into the session id (no ambiguous concatenation)", () => {
    expect(sessionPseudonym(KEY, { org: "a", uid: "b" }, "c")).not.toBe(
      sessionPseudonym(KEY, { org: "a", uid: "bc" }, "_"),
    );
    expect(trailHash(KEY, { org: "ab", uid: "c" }, "x")).not.toBe(
      trailHash(KEY, { org: "a", uid: "bc" }, "x"),
    );
  });

  it("a keyed hash is scope-bound and never equals the session pseudonym of the same text", () => {
    const h = trailHash(KEY, A, "patient:Zelda Quixote");
    expect(h).toMatch(/^kh_[0-9a-f]{32}$/);
    expect(trailHash(KEY, B, "patient:Zelda Quixote")).not.toBe(h);
    expect(trailHash(KEY, A, "s1").slice(3)).not.toBe(sessionPseudonym(KEY, A, "s1").slice(3));
  });
});
