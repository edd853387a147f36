import { trailHash, trailKey } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { promptCacheKey } from "../src/keys.js";

describe("the prompt-cache key", () => {
  it("is the scope's keyed hash, the same on every call, and differs per scope and per key", () => {
    const key = trailKey("a-trail-key-of-at-least-32-bytes-long");
    const of = promptCacheKey(key);
    const scope = { org: "acme", uid: "u1" };
    expect(of(scope)).toBe(trailHash(key, scope, "prompt_cache_key"));
    expect(of({ org: "acme", uid: "u1" })).toBe(of(scope));
    expect(of({ org: "acme", uid: "u2" })).toBe(
      trailHash(key, { org: "acme", uid: "u2" }, "prompt_cache_key"),
    );
    expect(of({ org: "acme", uid: "u2" })).not.toBe(of(scope));
    expect(promptCacheKey(trailKey("another-trail-key-of-32-bytes-or-more"))(scope)).not.toBe(
      of(scope),
    );
    expect(() => of({ org: "a b", uid: "u" })).toThrow();
  });
});
